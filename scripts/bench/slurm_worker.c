/* Worker for scripts/bench/slurm: it records, in CLOCK_REALTIME nanoseconds, when it
 * started, in a file of its own in DIR, and exits 0. The benchmark reads the files after the
 * step has ended to learn when the last worker of the step started; every Slurm node of the
 * local cluster is the same machine, so the workers' clock is the benchmark's.
 *
 *   slurm_worker DIR
 *
 * The file is DIR/start.PID and holds "NS NODE": the time and SLURMD_NODENAME (the Slurm
 * node the worker runs on, inherited through the launcher; "unknown" when unset), so that
 * the benchmark can check that every node started its share of workers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (argc != 2) {
    fprintf(stderr, "usage: slurm_worker DIR\n");
    return 2;
  }
  const char* node = getenv("SLURMD_NODENAME");
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/start.%d", argv[1], (int)getpid());
  int length =
      snprintf(line, sizeof line, "%lld %s\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec,
               node != NULL && *node != '\0' ? node : "unknown");
  /* One write of a few bytes: the benchmark reads the file only after the step has ended. */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 || write(fd, line, (size_t)length) != length || close(fd) != 0) {
    perror(path);
    return 2;
  }
  return 0;
}
