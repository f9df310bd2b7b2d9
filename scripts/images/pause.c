/*
 * The sandbox ("pause") process of the harness's pods: holds the pod's namespaces and
 * cgroup, reaps orphans (it is PID 1 of the pod when the PID namespace is shared), and exits
 * on SIGTERM or SIGINT. As PID 1 of a namespace it must install handlers: the kernel drops
 * signals whose disposition is the default for a namespace init.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
  return 0;
}
