/*
 * evictd-memhog: the workload for the kernel tests and `evictd bench notify`.
 *
 *   evictd-memhog serve
 *     Reads one command per line on stdin, answers one line on stdout:
 *       alloc BYTES [USAGE_FILE THRESHOLD [RATE]]
 *                                           map and touch BYTES of anonymous memory;
 *                                           with USAGE_FILE, read the cgroup's usage as it
 *                                           nears THRESHOLD and stamp the start of the last
 *                                           read below it (the crossing's lower bound); with RATE
 *                                           (bytes/s, 0: as fast as it can), pace the touches
 *                                           to that ramp rate
 *                                           -> "ok START_NS END_NS CROSS_NS" (0: no crossing)
 *       free                                unmap everything -> "ok NS"
 *       exit                                -> "ok NS", then exit
 *   evictd-memhog thrash FILE SECONDS [keep]
 *     Drops FILE's cached pages (unless "keep"), prints "start NS", then reads FILE over and
 *     over for SECONDS (page-cache thrash when FILE is larger than the memcg limit), then exits.
 *     "keep" starts with whatever is cached: a memcg left full by an earlier run stays full.
 *
 * Every NS is CLOCK_MONOTONIC in nanoseconds, the clock of the addon's event timestamps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_REGIONS 1024

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long long read_usage(const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return strtoll(buf, NULL, 10);
}

static struct {
  char *addr;
  size_t len;
} regions[MAX_REGIONS];
static int nregions;

/* Waits until `target` (CLOCK_MONOTONIC ns): sleeps when far ahead, spins the last stretch, so
 * a paced ramp is smooth at the page level rather than in timer-slack-sized bursts. */
static void pace_until(uint64_t target) {
  for (;;) {
    uint64_t now = now_ns();
    if (now >= target) return;
    if (target - now > 200000) {
      struct timespec ts = {0, (long)(target - now - 100000)};
      nanosleep(&ts, NULL);
    }
  }
}

static int cmd_alloc(size_t bytes, const char *usage_file, long long threshold, unsigned long long rate) {
  long page = sysconf(_SC_PAGESIZE);
  if (nregions == MAX_REGIONS) return -1;
  char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  regions[nregions].addr = p;
  regions[nregions].len = bytes;
  nregions++;
  long long base = usage_file ? read_usage(usage_file) : -1;
  /* The counter runs ahead of the pages touched: memcg charges a per-CPU batch of 64 pages at
   * a time, and a THP fault 512. So from NEAR bytes below the line on, the counter itself is
   * read every 16 pages, and the crossing is stamped as the start of the last read that still
   * saw it below the line: no reader of the counter can have seen it past the line earlier (a
   * lower bound, late by at most 16 pages and one read). -1: no crossing to stamp. */
  const long long near = 4ll << 20;
  long long near_at = base >= 0 && threshold > base ? (threshold - base > near ? threshold - base - near : 0) : -1;
  uint64_t cross_ns = 0, last_below_ns = 0;
  int crossed = 0;
  uint64_t start = now_ns();
  for (size_t off = 0; off < bytes; off += (size_t)page) {
    if (rate > 0) pace_until(start + (uint64_t)((double)off * 1e9 / (double)rate));
    if (!crossed && near_at >= 0 && (long long)off >= near_at && ((off / (size_t)page) % 16) == 0) {
      uint64_t t = now_ns();
      long long usage = read_usage(usage_file);
      if (usage >= threshold) {
        crossed = 1;
        cross_ns = last_below_ns; /* 0 when the first read in reach was already past: no stamp */
      } else if (usage >= 0) {
        last_below_ns = t;
      }
    }
    p[off] = 1;
  }
  /* Usage reached the line after the last touch (a batch charged at the end): the last read
   * below it is still the lower bound. */
  if (!crossed && last_below_ns != 0 && usage_file && read_usage(usage_file) >= threshold) cross_ns = last_below_ns;
  printf("ok %llu %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns(), (unsigned long long)cross_ns);
  return 0;
}

static void cmd_free(void) {
  for (int i = 0; i < nregions; i++) munmap(regions[i].addr, regions[i].len);
  nregions = 0;
  printf("ok %llu\n", (unsigned long long)now_ns());
}

static int serve(void) {
  char line[4096];
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32] = "", file[4000] = "";
    unsigned long long bytes = 0;
    long long threshold = 0;
    unsigned long long rate = 0;
    int n = sscanf(line, "%31s %llu %3999s %lld %llu", cmd, &bytes, file, &threshold, &rate);
    if (n >= 2 && strcmp(cmd, "alloc") == 0) {
      if (cmd_alloc((size_t)bytes, n >= 4 ? file : NULL, threshold, n == 5 ? rate : 0) != 0)
        printf("error %s\n", strerror(errno));
    } else if (n >= 1 && strcmp(cmd, "free") == 0) {
      cmd_free();
    } else if (n >= 1 && strcmp(cmd, "exit") == 0) {
      printf("ok %llu\n", (unsigned long long)now_ns());
      fflush(stdout);
      _exit(0);
    } else {
      printf("error unknown command\n");
    }
  }
  return 0;
}

static int thrash(const char *path, double seconds, int keep) {
  static char buf[1 << 20];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  /* Pages cached by whoever wrote the file stay charged to that writer's memcg, and cache hits
   * would never fault: write back and drop them so every read charges this memcg. */
  if (!keep) {
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  uint64_t start = now_ns();
  printf("start %llu\n", (unsigned long long)start);
  fflush(stdout);
  uint64_t end = start + (uint64_t)(seconds * 1e9);
  while (now_ns() < end) {
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    off_t off = 0;
    while (n > 0 && now_ns() < end) {
      off += n;
      n = pread(fd, buf, sizeof buf, off);
    }
    if (n < 0) {
      perror("read");
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "serve") == 0) return serve();
  if (argc >= 4 && strcmp(argv[1], "thrash") == 0) {
    return thrash(argv[2], atof(argv[3]), argc >= 5 && strcmp(argv[4], "keep") == 0);
  }
  fprintf(stderr, "usage: evictd-memhog serve | thrash FILE SECONDS [keep]\n");
  return 2;
}
