/*
 * A memory hog for eviction tests and the demo:
 *
 *   hog <MiB per second> <target MiB> [hold seconds]
 *
 * Allocates and touches anonymous memory one MiB at a time at the given rate until it holds
 * <target MiB>, then holds it for [hold seconds] (default: until stopped; 0 = exit at once).
 * After each step it prints one line "<CLOCK_MONOTONIC ns> <MiB held>" to stdout (and to the
 * file named by $HOG_OUT, if set), flushed at once, so a reader can tell when a threshold was
 * crossed on the same clock the kernel and Node's process.hrtime use. SIGTERM prints
 * "<ns> term" and exits 0; as PID 1 of its container it must handle the signal itself.
 *
 * With $HOG_CHECKPOINT set, SIGTERM first writes a checkpoint there, as a workload that saves
 * its state on a graceful stop does: "checkpoint <ns> <MiB held>\n", fsync'd, then exits 0.
 * A checkpoint file with that line proves the handler ran to its end; a kernel OOM kill (or
 * SIGKILL) leaves none. $HOG_CHECKPOINT_ALLOC_MIB=<N> makes the handler allocate and touch N MiB
 * of anonymous memory first, as a workload that serializes its state into buffers does; the line
 * is then "checkpoint <ns> <MiB held> <N> <ns when the N MiB were touched>".
 *
 * With $HOG_METER set, the hog stamps the node's memory itself, for a race where every contender
 * is timed alike (`bench protect --peers`): it prints "<ns> start" before its first MiB, and
 * after each MiB it preads /proc/meminfo and prints
 *   "<ns after the read> <MiB held> <ns the MiB's touch began> <MemAvailable> <MemFree> <Inactive(file)> <kubelet>"
 * (kB as /proc/meminfo prints them; <kubelet> is the kubelet's node memory.available on cgroup v2,
 * MemTotal - (AnonPages + the page cache - Inactive(file)), from the machine's counters of the
 * pages the root's memory.stat counts as anon + file, as evictd's tripwire computes it). Whoever reads the log finds the moment the hog first saw a
 * signal below a line, with the window in which it crossed, without a sampler of its own.
 * $HOG_METER_FINE="<KiB>:<MiB>" narrows that window near the lines: once a reading shows
 * MemAvailable below <MiB>, the hog reads after every <KiB> (16-1024, a power of two) instead of
 * every MiB, and "<MiB held>" is then a fraction ("412.062500"), "<ns the MiB's touch began>" the
 * start of that chunk's touch. A MiB is 5-30 ms of touching on emulated CPUs: too coarse a
 * window for a reaction of a millisecond. Without the meter, $HOG_STEP_KIB=<KiB> logs
 * "<ns> <MiB held>" after every <KiB> the same way, for a ramp timed on the host.
 *
 * With $HOG_CHURN set, once it holds <target MiB> it goes on at the same rate allocating,
 * touching and unmapping one more MiB, printing "<ns> lat <ns it took>" each time: a pod that
 * keeps allocating, whose allocation latency shows whether another pod's trouble slows it.
 *
 * With $HOG_PROBE=<line KiB> set, once it holds <target MiB> it is a protected pod's workload
 * that says what another pod's runaway costs it (`bench protect --peers`): every 1 ms it
 * touches one page of what it holds (cycling through all of it), sums that page (a fixed small
 * unit of work) and preads /proc/meminfo, and it tracks the gap between the starts of
 * consecutive iterations. A stall of the node (reclaim, its own code paged out, a CPU taken)
 * shows as a long gap. To keep its log bounded it prints only events, each stamped with
 * CLOCK_MONOTONIC ns:
 *   "<ns> probe <line KiB> <MiB held>"     once, when the loop starts
 *   "<end ns> gap <start ns>"              an iteration started more than 2 ms after the last
 *   "<ns> below <MemAvailable kB>"         the first reading below the line (after one at or above it)
 *   "<ns> above <MemAvailable kB>"         the first reading at or above the line (after one below)
 *   "<ns> beat <max gap ns> <min MemAvailable kB>"   every second, over that second
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

static int out_fd = -1;
/* /proc/meminfo, kept open and pread from offset 0 (HOG_METER); -1 when off. */
static int meminfo_fd = -1;
static const char *checkpoint_path;
static long checkpoint_alloc_mib;
/* MiB held so far, read by the signal handler. */
static volatile sig_atomic_t held_mib;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* write(2) only: this also runs in the signal handler. */
static void emit(const char *line, size_t len) {
  ssize_t ignored = write(STDOUT_FILENO, line, len);
  if (out_fd >= 0) ignored = write(out_fd, line, len);
  (void)ignored;
}

/* Appends the decimal digits of v to buf at *len (snprintf is not async-signal-safe). */
static void put_number(char *buf, size_t *len, long long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0) buf[(*len)++] = digits[--n];
}

/* open/write/fsync/close only: async-signal-safe. Exit status 1 if the checkpoint failed. */
static int write_checkpoint(long long ns) {
  char line[96];
  size_t len = 0;
  memcpy(line, "checkpoint ", 11);
  len = 11;
  put_number(line, &len, ns);
  line[len++] = ' ';
  put_number(line, &len, (long long)held_mib);
  if (checkpoint_alloc_mib > 0) {
    /* mmap and page touches: raw syscalls and faults, safe in a handler. */
    char *buf = mmap(NULL, (size_t)checkpoint_alloc_mib * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return 1;
    for (size_t off = 0; off < (size_t)checkpoint_alloc_mib * MIB; off += 4096) buf[off] = 1;
    line[len++] = ' ';
    put_number(line, &len, checkpoint_alloc_mib);
    line[len++] = ' ';
    put_number(line, &len, now_ns());
  }
  line[len++] = '\n';
  int fd = open(checkpoint_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  int ok = write(fd, line, len) == (ssize_t)len && fsync(fd) == 0;
  return close(fd) == 0 && ok ? 0 : 1;
}

static void on_term(int sig) {
  (void)sig;
  char line[64];
  long long ns = now_ns();
  int status = checkpoint_path ? write_checkpoint(ns) : 0;
  size_t len = 0;
  put_number(line, &len, ns);
  memcpy(line + len, " term\n", 6);
  emit(line, len + 6);
  _exit(status);
}

/* The value in kB of the /proc/meminfo field named `key` (with its colon), or -1. */
static long long meminfo_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (!p) return -1;
  p += strlen(key);
  while (*p == ' ') p++;
  return strtoll(p, NULL, 10);
}

/* MemAvailable (kB) at the last reading, for HOG_METER_FINE; -1 before the first. */
static long long last_available_kb = -1;

/*
 * The kubelet's node memory.available on cgroup v2, kB: MemTotal - (anon + file - inactive_file),
 * anon + file being AnonPages + Buffers + Cached + SwapCached (NR_ANON_MAPPED + NR_FILE_PAGES).
 */
static long long kubelet_available_kb(const char *text) {
  long long total = meminfo_field(text, "MemTotal:"), anon = meminfo_field(text, "\nAnonPages:");
  long long buffers = meminfo_field(text, "\nBuffers:"), cached = meminfo_field(text, "\nCached:");
  long long swap_cached = meminfo_field(text, "\nSwapCached:"), inactive = meminfo_field(text, "\nInactive(file):");
  if (total < 0 || anon < 0 || buffers < 0 || cached < 0 || inactive < 0) return -1;
  long long used = anon + buffers + cached + (swap_cached > 0 ? swap_cached : 0) - inactive;
  return used < 0 ? total : (used > total ? 0 : total - used);
}

/*
 * One reading after a MiB (or, fine, after a chunk of it: `held_kib` KiB held in all): the
 * fields the peers' and the kubelet's signals are made of.
 */
static int meter_line(char *line, size_t size, long long held_kib, long long touch_ns) {
  char text[4096];
  char held[32];
  if (held_kib % 1024 == 0) snprintf(held, sizeof held, "%lld", held_kib / 1024);
  else snprintf(held, sizeof held, "%.6f", (double)held_kib / 1024.0);
  ssize_t n = pread(meminfo_fd, text, sizeof text - 1, 0);
  if (n <= 0) return snprintf(line, size, "%lld %s\n", now_ns(), held);
  text[n] = '\0';
  long long ns = now_ns();
  last_available_kb = meminfo_field(text, "MemAvailable:");
  return snprintf(line, size, "%lld %s %lld %lld %lld %lld %lld\n", ns, held, touch_ns, last_available_kb, meminfo_field(text, "MemFree:"),
                  meminfo_field(text, "Inactive(file):"), kubelet_available_kb(text));
}

#define PROBE_PERIOD_NS 1000000LL
#define PROBE_GAP_NS 2000000LL

/* HOG_PROBE: the loop above, over the `n` MiB at `chunks`; never returns. */
static void probe(char **chunks, long n, long long line_kb) {
  int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror("hog: HOG_PROBE: /proc/meminfo");
    exit(1);
  }
  char line[128];
  char text[4096];
  int len = snprintf(line, sizeof line, "%lld probe %lld %ld\n", now_ns(), line_kb, n);
  emit(line, (size_t)len);
  long pages_per_mib = MIB / 4096, page = 0, total = n * pages_per_mib;
  long long prev = 0, beat_start = now_ns(), beat_gap = 0, beat_min = -1;
  int below = 0;
  volatile unsigned long long sink = 0;
  for (;;) {
    long long t = now_ns();
    if (prev) {
      long long gap = t - prev;
      if (gap > beat_gap) beat_gap = gap;
      if (gap > PROBE_GAP_NS) {
        len = snprintf(line, sizeof line, "%lld gap %lld\n", t, prev);
        emit(line, (size_t)len);
      }
    }
    prev = t;
    /* One page touched (written, then summed): the pod's own memory in use, as a service's is. */
    unsigned long long *w = (unsigned long long *)(chunks[page / pages_per_mib] + (page % pages_per_mib) * 4096);
    w[0] += 1;
    unsigned long long sum = 0;
    for (int i = 0; i < 512; i++) sum += w[i] * (unsigned long long)(i + 1);
    sink += sum;
    page = (page + 1) % total;
    ssize_t r = pread(fd, text, sizeof text - 1, 0);
    if (r > 0) {
      text[r] = '\0';
      long long avail = meminfo_field(text, "MemAvailable:");
      long long ns = now_ns();
      if (avail >= 0) {
        if (beat_min < 0 || avail < beat_min) beat_min = avail;
        if (!below && avail < line_kb) {
          below = 1;
          len = snprintf(line, sizeof line, "%lld below %lld\n", ns, avail);
          emit(line, (size_t)len);
        } else if (below && avail >= line_kb) {
          below = 0;
          len = snprintf(line, sizeof line, "%lld above %lld\n", ns, avail);
          emit(line, (size_t)len);
        }
      }
    }
    long long end = now_ns();
    if (end - beat_start >= 1000000000LL) {
      len = snprintf(line, sizeof line, "%lld beat %lld %lld\n", end, beat_gap, beat_min);
      emit(line, (size_t)len);
      beat_start = end;
      beat_gap = 0;
      beat_min = -1;
    }
    /* The next iteration 1 ms after this one began; at once if this one ran late (no catching up). */
    long long due = t + PROBE_PERIOD_NS;
    if (due > end) {
      struct timespec ts = {.tv_sec = due / 1000000000LL, .tv_nsec = due % 1000000000LL};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
      }
    }
  }
}

static long parse_arg(const char *name, const char *text) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) {
    fprintf(stderr, "hog: %s: \"%s\": must be a whole number >= 0\n", name, text);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: hog <MiB per second> <target MiB> [hold seconds]\n");
    return 2;
  }
  long rate = parse_arg("MiB per second", argv[1]);
  long target = parse_arg("target MiB", argv[2]);
  long hold = argc == 4 ? parse_arg("hold seconds", argv[3]) : -1;
  if (rate == 0) {
    fprintf(stderr, "hog: MiB per second: \"%s\": must be > 0\n", argv[1]);
    return 2;
  }
  const char *path = getenv("HOG_OUT");
  if (path && *path) out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const char *cp = getenv("HOG_CHECKPOINT");
  if (cp && *cp) checkpoint_path = cp;
  const char *cp_alloc = getenv("HOG_CHECKPOINT_ALLOC_MIB");
  if (cp_alloc && *cp_alloc) checkpoint_alloc_mib = parse_arg("HOG_CHECKPOINT_ALLOC_MIB", cp_alloc);
  const char *meter = getenv("HOG_METER");
  if (meter && *meter) meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
  /* HOG_METER_FINE="<KiB>:<MiB>": read every <KiB> once MemAvailable is below <MiB>. */
  long fine_kib = 1024;
  long long fine_below_kb = -1;
  const char *fine = getenv("HOG_METER_FINE");
  if (meminfo_fd >= 0 && fine && *fine) {
    long kib = 0, below = 0;
    if (sscanf(fine, "%ld:%ld", &kib, &below) != 2 || kib < 16 || kib > 1024 || (kib & (kib - 1)) != 0 || below <= 0) {
      fprintf(stderr, "hog: HOG_METER_FINE: \"%s\": must be <KiB>:<MiB>, KiB a power of two from 16 to 1024\n", fine);
      return 2;
    }
    fine_kib = kib;
    fine_below_kb = below * 1024LL;
  }
  /* HOG_STEP_KIB=<KiB>: without the meter, log "<ns> <MiB held>" after every <KiB> touched. */
  long step_kib = 1024;
  const char *steps = getenv("HOG_STEP_KIB");
  if (meminfo_fd < 0 && steps && *steps) {
    step_kib = strtol(steps, NULL, 10);
    if (step_kib < 16 || step_kib > 1024 || (step_kib & (step_kib - 1)) != 0) {
      fprintf(stderr, "hog: HOG_STEP_KIB: \"%s\": must be a power of two from 16 to 1024\n", steps);
      return 2;
    }
  }

  /* HOG_PROBE=<line KiB>: the probe loop once the target is held (its pages kept in `chunks`). */
  long long probe_line_kb = -1;
  const char *probe_env = getenv("HOG_PROBE");
  if (probe_env && *probe_env) probe_line_kb = parse_arg("HOG_PROBE", probe_env);
  char **chunks = probe_line_kb >= 0 ? calloc((size_t)(target > 0 ? target : 1), sizeof *chunks) : NULL;

  struct sigaction term = {.sa_handler = on_term};
  sigaction(SIGTERM, &term, NULL);
  sigaction(SIGINT, &term, NULL);

  long long start = now_ns();
  long long step_ns = 1000000000LL / rate;
  if (meminfo_fd >= 0) {
    char line[64];
    int len = snprintf(line, sizeof line, "%lld start\n", start);
    emit(line, (size_t)len);
  }
  for (long held = 1; held <= target; held++) {
    long long touch_ns = now_ns();
    char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("hog: mmap");
      return 1;
    }
    if (chunks) chunks[held - 1] = p;
    /* Touch every page so the memory is charged to the cgroup now, not on first use; near the
       lines (HOG_METER_FINE) read after every chunk of it. */
    char line[160];
    long chunk = meminfo_fd < 0 ? step_kib * 1024 : last_available_kb >= 0 && last_available_kb < fine_below_kb ? fine_kib * 1024 : MIB;
    for (long from = 0; from < MIB; from += chunk) {
      for (long off = from; off < from + chunk; off += 4096) p[off] = (char)held;
      if (from + chunk < MIB) {
        long long kib = (held - 1) * 1024LL + (from + chunk) / 1024;
        int len = meminfo_fd >= 0 ? meter_line(line, sizeof line, kib, touch_ns) : snprintf(line, sizeof line, "%lld %.6f\n", now_ns(), (double)kib / 1024.0);
        emit(line, (size_t)len);
        touch_ns = now_ns();
      }
    }
    held_mib = (sig_atomic_t)held;
    int len = meminfo_fd >= 0 ? meter_line(line, sizeof line, held * 1024LL, touch_ns) : snprintf(line, sizeof line, "%lld %ld\n", now_ns(), held);
    emit(line, (size_t)len);
    long long due = start + held * step_ns;
    struct timespec ts = {.tv_sec = due / 1000000000LL, .tv_nsec = due % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
  }
  if (getenv("HOG_CHURN")) {
    for (long n = 1;; n++) {
      long long t0 = now_ns();
      char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        perror("hog: mmap");
        return 1;
      }
      for (long off = 0; off < MIB; off += 4096) p[off] = (char)n;
      munmap(p, MIB);
      long long t1 = now_ns();
      char line[64];
      int len = snprintf(line, sizeof line, "%lld lat %lld\n", t1, t1 - t0);
      emit(line, (size_t)len);
      long long due = t0 + step_ns;
      struct timespec ts = {.tv_sec = due / 1000000000LL, .tv_nsec = due % 1000000000LL};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
      }
    }
  }
  if (chunks && target > 0) probe(chunks, target, probe_line_kb);
  if (hold < 0) {
    for (;;) pause();
  }
  sleep((unsigned)hold);
  return 0;
}
