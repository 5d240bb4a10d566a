/* The fork/exec floor for scripts/bench/launch: start N copies of PROGRAM at once with
 * posix_spawn and wait for all of them; nothing else.
 *
 *   spawn_floor N PROGRAM [ARGS...] */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: spawn_floor N PROGRAM [ARGS...]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  for (int i = 0; i < n; ++i) {
    pid_t pid;
    int rc = posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ);
    if (rc != 0) {
      fprintf(stderr, "spawn_floor: cannot start %s\n", argv[2]);
      return 1;
    }
  }
  int status, failed = 0;
  while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return failed;
}
