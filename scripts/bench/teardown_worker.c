/* Worker for scripts/bench/launch's failure-to-teardown measurement.
 *
 *   teardown_worker DIR
 *
 * Rank 0 waits until every other rank is ready, writes the CLOCK_MONOTONIC time (ns) to
 * DIR/exit.0 and exits 1: the failure. Every other rank blocks SIGTERM, announces itself
 * with DIR/ready.<rank>, waits for SIGTERM with sigtimedwait, and writes the time it
 * arrived to DIR/term.<rank>. A launcher's teardown latency is term - exit.
 * The rank comes from RANK (torchrun, gangrun) or OMPI_COMM_WORLD_RANK (mpirun). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int env_int(const char* name, const char* fallback) {
  const char* value = getenv(name);
  if (value == NULL) value = getenv(fallback);
  if (value == NULL) {
    fprintf(stderr, "teardown_worker: neither %s nor %s is set\n", name, fallback);
    exit(2);
  }
  return atoi(value);
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_file(const char* dir, const char* kind, int rank, long long value) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%d", dir, kind, rank);
  FILE* f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    exit(2);
  }
  fprintf(f, "%lld\n", value);
  fclose(f);
}

static int all_ready(const char* dir, int world) {
  char path[4096];
  for (int r = 1; r < world; ++r) {
    snprintf(path, sizeof path, "%s/ready.%d", dir, r);
    if (access(path, F_OK) != 0) return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: teardown_worker DIR\n");
    return 2;
  }
  const char* dir = argv[1];
  int rank = env_int("RANK", "OMPI_COMM_WORLD_RANK");
  int world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");

  if (rank == 0) {
    const struct timespec tick = {0, 200000}; /* 0.2 ms */
    for (int i = 0; !all_ready(dir, world); ++i) {
      if (i > 100000) return 3; /* 20 s: the others never started */
      nanosleep(&tick, NULL);
    }
    write_file(dir, "exit", 0, now_ns());
    return 1;
  }

  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, NULL);
  write_file(dir, "ready", rank, 0);
  const struct timespec limit = {20, 0};
  int sig = sigtimedwait(&term, NULL, &limit);
  long long arrived = now_ns();
  if (sig != SIGTERM) return errno == EAGAIN ? 4 : 5;
  write_file(dir, "term", rank, arrived);
  return 0;
}
