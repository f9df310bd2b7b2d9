import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFields, parseTrace } from '../../src/lab/bench/peers/signal-trace';

// Lines as the lab VM's 6.1 kernel printed them (a private instance, trace_clock=mono), plus a
// sender whose name holds a space and a dash, and mark_victim in 6.1's long form.
const TRACE = `# tracer: nop
#
# entries-in-buffer/entries-written: 5/5   #P:2
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
  trace-probe.sh-146     [001] d..1.     4.102605: signal_generate: sig=15 errno=0 code=0 comm=trace-probe.sh pid=152 grp=1 res=0
  trace-probe.sh-146     [001] d..1.     4.201687: signal_generate: sig=9 errno=0 code=0 comm=sleep pid=154 grp=0 res=0
           sleep-154     [000] .....     4.202594: sched_process_exit: comm=sleep pid=154 prio=120
 evictd tripwire-7-1203  [000] d..2.   812.000001: signal_generate: sig=9 errno=0 code=0 comm=my hog pid=900 grp=1 res=2
             hog-900     [001] .....   812.500000: mark_victim: pid=900 comm=hog total-vm=1000kB anon-rss=900kB file-rss:0kB shmem-rss:0kB uid=0 pgtables=8kB oom_score_adj=1000
not a trace line
`;

test('parseTrace: sender, CLOCK_MONOTONIC ns from sec.usec, the event and its fields; headers and junk skipped', () => {
  const ev = parseTrace(TRACE);
  assert.equal(ev.length, 5);
  assert.deepEqual(ev[0], {
    event: 'signal_generate',
    ns: 4_102_605_000n,
    comm: 'trace-probe.sh',
    pid: 146,
    fields: { sig: '15', errno: '0', code: '0', comm: 'trace-probe.sh', pid: '152', grp: '1', res: '0' },
  });
  assert.equal(ev[2]!.event, 'sched_process_exit');
  assert.equal(ev[2]!.ns, 4_202_594_000n);
  assert.equal(ev[3]!.comm, 'evictd tripwire-7', 'a task name with a space and a dash stays whole; the pid is the last -digits');
  assert.equal(ev[3]!.pid, 1203);
  assert.equal(ev[3]!.fields.comm, 'my hog', "the target's name with a space stays whole");
  assert.equal(ev[3]!.fields.res, '2');
  assert.equal(ev[4]!.event, 'mark_victim');
  assert.equal(ev[4]!.fields.pid, '900');
});

test('parseFields: values run to the next key', () => {
  assert.deepEqual(parseFields('a=1 b=two words c=3'), { a: '1', b: 'two words', c: '3' });
  assert.deepEqual(parseFields(''), {});
});
