/** How a benchmark names where it ran: emulated CPUs, the guest's idle policy, the lab. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchEnvironment, describeEnvironment } from '../../src/lab/environment';

const TCG = 'processor\t: 0\nmodel name\t: QEMU TCG CPU version 2.5+\nflags\t\t: fpu de pse tsc hypervisor lahf_lm\n';
const KVM_GUEST = 'processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\nflags\t\t: fpu vme de pse tsc hypervisor avx2\n';
const METAL = 'processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\nflags\t\t: fpu vme de pse tsc avx2\n';

test('the VM lab with idle=poll is named as emulated, with its idle policy and lab', () => {
  const e = benchEnvironment(TCG, 'console=ttyS0 cgroup_no_v1=all idle=poll evictd_job=/tmp/x\n', 'v2vm');
  assert.equal(e.cpu, 'qemu-tcg');
  assert.equal(e.idle, 'poll');
  assert.equal(e.lab, 'v2vm');
  assert.match(describeEnvironment(e), /CPUs emulated by QEMU TCG \(lab v2vm\), idle=poll$/);
});

test('a cloud VM and bare metal are told apart; without idle= the CPUs halt', () => {
  assert.equal(benchEnvironment(KVM_GUEST, 'ro quiet\n', '').cpu, 'vm');
  const metal = benchEnvironment(METAL, 'ro quiet widle=x\n', undefined);
  assert.equal(metal.cpu, 'bare');
  assert.equal(metal.idle, 'default', 'a parameter that only ends in idle= is not idle=');
  assert.equal(metal.lab, null);
  assert.match(describeEnvironment(metal), /CPUs bare metal, idle CPUs halt$/);
});
