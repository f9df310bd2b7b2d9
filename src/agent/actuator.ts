/**
 * The actuator: carries out the ordered actions one pass decided (src/policy/actions.ts) through
 * the agent's effects (src/agent/effects/), one interface for all of them, so dry run is one
 * wrapper (effect.ts) rather than a branch in each. It owns no decision: which pod, in which
 * order, with which grace period all come from the policy; what it adds is what only doing can
 * tell (a stop that failed, so the next candidate; a reclaim that resolved the pressure, so no
 * eviction; an eviction done, so look again at once).
 *
 * Every eviction outcome is one EvictionRecord, handed to `record`.
 */
import type { Logger } from 'pino';
import type { Action } from '../policy/actions';
import type { Relax } from '../policy/memory-pressure';
import type { Eviction, ThresholdStatus } from '../policy/evaluate';
import { isMemorySignal } from '../policy/signals';
import type { Signal } from '../policy/types';
import type { JoinedPod } from './active-pods';
import { msBetween } from './clock';
import type { PassResult } from './controller';
import { dryRun, type Effect } from './effects/effect';
import type { EvictInput, EvictionRecord, PassStamps } from './effects/eviction';
import type { FastKill } from './effects/fast-kill';
import type { BrakeEase, BrakeOff, BrakeOn } from './effects/memory-brake';
import { MEMORY_BRAKE_STOP_HEADROOM_BYTES } from '../policy/config';
import type { ConfirmInput } from './effects/order-confirm';
import type { ReclaimInput } from './effects/node-reclaim';
import type { AgentMetrics } from './metrics';

export type { EvictionRecord, PassStamps } from './effects/eviction';

/** What an eviction effect that stops in the background tells (CriStop's graceful stops). */
export interface BackgroundStops {
  isInFlight(uid: string): boolean;
  anyInFlight(): boolean;
  settle(): Promise<void>;
}

/** The agent's effects, one per kind of action. */
export interface Effects {
  fastKill: FastKill;
  stop: Effect<EvictInput, EvictionRecord> & Partial<BackgroundStops>;
  reclaim: Effect<ReclaimInput, boolean>;
  /** absent when the memory brake is off */
  brake?: Effect<BrakeOn, void>;
  releaseBrake?: Effect<BrakeOff, void>;
  easeBrake?: Effect<BrakeEase, void>;
  /** absent when standing orders are off (no order can be used, so none is confirmed) */
  confirm?: Effect<ConfirmInput, EvictionRecord | null>;
  /** KEP-5986 stage 1; absent when it is off */
  relax?: Effect<readonly Relax[], void>;
}

export interface ActuatorOptions {
  effects: Effects;
  logger: Logger;
  metrics: AgentMetrics;
  dryRun: boolean;
  /** kill a pod's processes through its cgroup before StopPodSandbox, for hard memory thresholds */
  fastKill: boolean;
  /** every eviction record as it is final */
  record: (rec: EvictionRecord) => void;
}

export class Actuator {
  private readonly fx: Required<Omit<Effects, 'fastKill' | 'confirm'>> & {
    fastKill: Effect<EvictInput, EvictionRecord>;
    confirm?: Effect<ConfirmInput, EvictionRecord | null>;
  };

  constructor(private readonly o: ActuatorOptions) {
    const e = o.effects;
    const none: Effect<unknown, void> = { run: () => Promise.resolve(), rehearse: () => ({ message: null, fields: {}, outcome: undefined }) };
    const all = {
      fastKill: e.fastKill as Effect<EvictInput, EvictionRecord>,
      stop: e.stop,
      reclaim: e.reclaim,
      brake: e.brake ?? none,
      releaseBrake: e.releaseBrake ?? none,
      easeBrake: e.easeBrake ?? none,
      relax: e.relax ?? none,
    };
    const fx = o.dryRun
      ? {
          fastKill: dryRun(all.fastKill, o.logger),
          stop: dryRun(all.stop, o.logger),
          reclaim: dryRun(all.reclaim, o.logger),
          brake: dryRun(all.brake, o.logger),
          releaseBrake: dryRun(all.releaseBrake, o.logger),
          easeBrake: dryRun(all.easeBrake, o.logger),
          relax: dryRun(all.relax, o.logger),
        }
      : all;
    this.fx = e.confirm ? { ...fx, confirm: o.dryRun ? dryRun(e.confirm, o.logger) : e.confirm } : fx;
  }

  /**
   * True while a fast-killed pod's StopPodSandbox is still running, or a graceful stop within
   * its bound: passes leave the pod out.
   */
  isInFlight(uid: string): boolean {
    return this.o.effects.fastKill.isInFlight(uid) || (this.o.effects.stop.isInFlight?.(uid) ?? false);
  }

  /** Waits for every background stop (graceful ones a few seconds at most). */
  async settle(): Promise<void> {
    await Promise.all([this.o.effects.fastKill.settle(), this.o.effects.stop.settle?.()]);
  }

  /** Carries out the actions in order; the pass ends where an action says so. */
  async execute(actions: readonly Action[], pods: readonly JoinedPod[], stamps: PassStamps): Promise<PassResult> {
    const byUid = new Map(pods.map((j) => [j.runtime.uid, j]));
    const again = { again: !this.o.dryRun };
    let confirmed = false;
    for (const a of actions) {
      // Confirmations come first: once one is done, the rest was decided on numbers read while
      // that pod's memory was still coming back, so the pass ends and the next one looks again.
      if (confirmed && a.type !== 'confirm-order') return again;
      switch (a.type) {
        case 'confirm-order': {
          const j = byUid.get(a.eviction.pod.uid);
          if (!j || !this.fx.confirm) {
            this.o.logger.error(
              { pod: `${a.eviction.pod.namespace}/${a.eviction.pod.name}`, uid: a.eviction.pod.uid },
              'a used standing order cannot be confirmed (no pod or no effect for it)',
            );
            break;
          }
          // null: the report is out and only the sandbox stop was started again.
          const rec = await this.fx.confirm.run({ pod: j, eviction: a.eviction, threshold: a.threshold, stamps, confirmation: a.confirmation });
          if (!rec) break;
          this.o.record(rec);
          confirmed = rec.ok || confirmed;
          break;
        }
        case 'release-brake':
          await this.fx.releaseBrake.run({ uid: a.uid, why: a.why });
          break;
        case 'brake': {
          const j = byUid.get(a.brake.pod.uid);
          if (j?.cgroup) await this.fx.brake.run({ brake: a.brake, podPath: j.cgroup.path });
          break;
        }
        case 'stop-braked':
          // Every stuck pod is stopped; the plan was made before those stops, so the pass ends.
          if (await this.stopBraked(a.evictions, byUid, stamps)) return again;
          break;
        case 'evict-all': {
          let any = false;
          for (const e of a.evictions) {
            const j = byUid.get(e.pod.uid);
            if (j) any = (await this.evict(j, e, null, false, stamps)).ok || any;
          }
          return { again: any && !this.o.dryRun };
        }
        case 'relax-memory-high':
          await this.fx.relax.run(a.relax);
          break;
        case 'evict-pressured': {
          // KEP-5986 stage 2: its one pod, and nothing else this pass (the next looks again)
          const j = byUid.get(a.eviction.pod.uid);
          if (!j) return undefined;
          const rec = await this.evict(j, a.eviction, null, false, stamps);
          return rec.pending ? undefined : { again: rec.ok && !this.o.dryRun };
        }
        case 'reclaim':
          if (await this.fx.reclaim.run({ signal: a.signal, functions: a.functions })) return { again: true };
          break;
        case 'evict-one':
          return this.evictOne(a, byUid, stamps);
      }
    }
    return confirmed ? again : undefined;
  }

  private async stopBraked(evictions: readonly Eviction[], byUid: ReadonlyMap<string, JoinedPod>, stamps: PassStamps): Promise<boolean> {
    let stopped = false;
    for (const e of evictions) {
      const j = byUid.get(e.pod.uid);
      if (!j) continue;
      this.o.logger.warn({ pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, reasons: e.reasons }, 'memory brake: pod braked too long; stopping it');
      this.o.metrics.brakeStops.inc();
      stopped = (await this.evict(j, e, null, false, stamps)).ok || stopped;
    }
    return stopped;
  }

  /** The first candidate that stops is evicted; a failed stop falls through to the next. */
  private async evictOne(a: Extract<Action, { type: 'evict-one' }>, byUid: ReadonlyMap<string, JoinedPod>, stamps: PassStamps): Promise<PassResult> {
    const o = this.o;
    if (stamps.trigger.firstEventNs !== null) {
      const src = Object.keys(stamps.trigger.sources).find((s) => s !== 'housekeeping' && s !== 'again') ?? 'unknown';
      o.metrics.eventToDecision.observe({ source: src }, Math.max(0, msBetween(stamps.trigger.firstEventNs, stamps.decisionNs)) / 1000);
    }
    if (a.candidates.length === 0) {
      o.logger.warn({ signal: a.signal, threshold: a.threshold }, 'threshold met but no pod can be evicted (none, or only critical pods)');
      return undefined;
    }
    // One soft eviction at a time, as the kubelet's loop waits for an evicted pod's cleanup:
    // the next look is when the graceful stop ends (or its bound passes). A hard threshold is
    // acted on meanwhile.
    if (!a.hard && !o.dryRun && this.o.effects.stop.anyInFlight?.()) {
      o.logger.debug({ signal: a.signal }, 'soft eviction waits for the graceful stop in flight');
      return undefined;
    }
    const fast = o.fastKill && a.hard && isMemorySignal(a.signal as Signal);
    for (const c of a.candidates) {
      const j = byUid.get(c.pod.uid);
      if (!j) continue;
      const rec = await this.evict(j, c, a.threshold, fast, stamps);
      // A graceful stop runs on in the background; its end wakes the next look.
      if (rec.pending) return undefined;
      if (rec.ok) return { again: !o.dryRun };
    }
    o.logger.error({ signal: a.signal, candidates: a.candidates.length }, 'no candidate could be evicted this pass');
    return undefined;
  }

  private async evict(pod: JoinedPod, eviction: Eviction, threshold: ThresholdStatus | null, fast: boolean, stamps: PassStamps): Promise<EvictionRecord> {
    // A fast kill needs the pod's cgroup; without one the runtime's stop is the only way.
    const effect = fast && pod.cgroup ? this.fx.fastKill : this.fx.stop;
    const running = effect.run({ pod, eviction, threshold, stamps });
    // A braked pod stopped gracefully gets room for its SIGTERM handler (its checkpoint), held
    // still until the runtime has sent the signal (memory-brake.ts easeForStop): in the
    // background, so that the pass (which a graceful stop leaves running) is not held up.
    if (eviction.gracePeriodSeconds > 0)
      void this.fx.easeBrake
        .run({ uid: pod.runtime.uid, headroomBytes: MEMORY_BRAKE_STOP_HEADROOM_BYTES, stopAsked: true })
        .catch((err: unknown) => this.o.logger.warn({ err, uid: pod.runtime.uid }, 'memory brake could not be eased for the graceful stop'));
    const rec = await running;
    // A pending stop's record comes when it ends (the effect's onFinished).
    if (!rec.pending) this.o.record(rec);
    return rec;
  }
}
