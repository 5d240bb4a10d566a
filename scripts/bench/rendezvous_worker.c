/* Worker for scripts/bench/rendezvous: it records, in CLOCK_MONOTONIC nanoseconds, when it
 * started, when it failed on purpose and when SIGTERM reached it, one small file per event
 * in DIR, so that the benchmark can read the times of workers on every simulated node (the
 * nodes share the file system and the clock).
 *
 *   rendezvous_worker DIR start           record the start, exit 0
 *   rendezvous_worker DIR wait S          record the start, wait up to S seconds for SIGTERM,
 *                                         record its arrival, exit 0 (also after S seconds)
 *   rendezvous_worker DIR fail RANK S     like wait, except that the worker of rank RANK waits
 *                                         until every rank of the world has started, records
 *                                         its exit and exits 1; in a restarted round
 *                                         (TORCHELASTIC_RESTART_COUNT > 0) every rank exits 0
 *
 * Files (W: WORLD_SIZE, R: RANK, C: TORCHELASTIC_RESTART_COUNT, or 0 when unset):
 *   DIR/start.wW.rR.cC   the time the process began
 *   DIR/exit.wW.rR.cC    the time the failing rank exits
 *   DIR/term.wW.rR.cC    the time SIGTERM arrived
 * Each holds "NS HOST": the time and the host name (the simulated node, nodeI). A file
 * appears complete: it is written under a temporary name and renamed. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int env_int(const char* name, int fallback) {
  const char* value = getenv(name);
  return value != NULL && *value != '\0' ? atoi(value) : fallback;
}

static int world, rank, restart;

static void event_path(char* path, size_t size, const char* dir, const char* kind, int for_rank) {
  snprintf(path, size, "%s/%s.w%d.r%d.c%d", dir, kind, world, for_rank, restart);
}

static void record(const char* dir, const char* kind, long long value) {
  char path[4096], temporary[4200], host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  event_path(path, sizeof path, dir, kind, rank);
  snprintf(temporary, sizeof temporary, "%s.tmp%d", path, (int)getpid());
  FILE* f = fopen(temporary, "w");
  if (f == NULL || fprintf(f, "%lld %s\n", value, host) < 0 || fclose(f) != 0 ||
      rename(temporary, path) != 0) {
    perror(path);
    exit(2);
  }
}

static int everyone_started(const char* dir) {
  char path[4096];
  for (int r = 0; r < world; ++r) {
    event_path(path, sizeof path, dir, "start", r);
    if (access(path, F_OK) != 0) return 0;
  }
  return 1;
}

/* SIGTERM is blocked before the start is recorded, so that a SIGTERM sent as soon as the
 * benchmark sees the start file is waited for, not fatal. */
static int wait_for_term(const char* dir, const sigset_t* term, int seconds) {
  const struct timespec limit = {seconds, 0};
  int sig = sigtimedwait(term, NULL, &limit);
  long long arrived = now_ns();
  if (sig == SIGTERM) record(dir, "term", arrived);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: rendezvous_worker DIR start | DIR wait S | DIR fail RANK S\n");
  return 2;
}

int main(int argc, char** argv) {
  long long started = now_ns();
  if (argc < 3) return usage();
  const char* dir = argv[1];
  const char* mode = argv[2];
  world = env_int("WORLD_SIZE", 1);
  rank = env_int("RANK", 0);
  restart = env_int("TORCHELASTIC_RESTART_COUNT", 0);

  if (strcmp(mode, "start") == 0 && argc == 3) {
    record(dir, "start", started);
    return 0;
  }
  int failing = strcmp(mode, "fail") == 0;
  if (!(strcmp(mode, "wait") == 0 && argc == 4) && !(failing && argc == 5)) return usage();
  int seconds = atoi(argv[argc - 1]);

  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, NULL);
  record(dir, "start", started);
  if (failing && restart > 0) return 0;
  if (!failing || rank != atoi(argv[3])) return wait_for_term(dir, &term, seconds);

  const struct timespec tick = {0, 200000}; /* 0.2 ms */
  long long deadline = started + (long long)seconds * 1000000000LL;
  while (!everyone_started(dir)) {
    if (now_ns() > deadline) return 3; /* the others never started */
    nanosleep(&tick, NULL);
  }
  record(dir, "exit", now_ns());
  return 1;
}
