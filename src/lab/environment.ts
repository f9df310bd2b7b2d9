/**
 * Where a benchmark ran, in the words its figures need: latencies under QEMU's TCG are 10-50
 * times a real node's, and a guest whose idle vCPUs halt wakes them through the host's
 * scheduler (milliseconds on a nested host), so a figure means little without these.
 */
import fs from 'node:fs';
import os from 'node:os';

function read(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export interface BenchEnvironment {
  kernel: string;
  cpus: number;
  /** 'qemu-tcg' (emulated CPUs), 'vm' (a hypervisor under hardware virtualization) or 'bare' */
  cpu: 'qemu-tcg' | 'vm' | 'bare';
  /** the kernel's idle= parameter ('poll': idle CPUs spin instead of halting), or 'default' */
  idle: string;
  /** EVICTD_LAB, set by the project's VM lab (v2vm) */
  lab: string | null;
}

export function benchEnvironment(cpuinfo = read('/proc/cpuinfo'), cmdline = read('/proc/cmdline'), lab = process.env.EVICTD_LAB): BenchEnvironment {
  const cpu = /^model name\s*:\s*QEMU TCG/m.test(cpuinfo) ? 'qemu-tcg' : /^flags\s*:.*\bhypervisor\b/m.test(cpuinfo) ? 'vm' : 'bare';
  const idle = /(?:^|\s)idle=(\S+)/.exec(cmdline)?.[1] ?? 'default';
  return { kernel: os.release(), cpus: os.cpus().length, cpu, idle, lab: lab || null };
}

/** One line: "kernel 6.1.0-56-amd64, 2 CPUs emulated by QEMU TCG (lab v2vm), idle=poll". */
export function describeEnvironment(e: BenchEnvironment = benchEnvironment()): string {
  const cpu = { 'qemu-tcg': 'emulated by QEMU TCG', vm: 'virtual (hardware-assisted)', bare: 'bare metal' }[e.cpu];
  const lab = e.lab !== null ? ` (lab ${e.lab})` : '';
  const idle = e.idle === 'default' ? 'idle CPUs halt' : `idle=${e.idle}`;
  return `kernel ${e.kernel}, ${e.cpus} CPUs ${cpu}${lab}, ${idle}`;
}
