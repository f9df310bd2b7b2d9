// The tripwire's life in an environment: loading the program, polling its ring buffer and
// handing each record to its line, the next-turn work of the lines, holding the loop for them,
// and unloading (after the last line, or at teardown). The line table and the N-API functions
// are in tripwire_methods.cc. Loop thread only, but for the BPF object's destruction.
#include "tripwire.h"

#include "addon_data.h"

#ifndef EVICTD_TRIPWIRE

namespace evictd {

void Tripwire::Init(Napi::Env env, Napi::Object exports, AddonData* /*data*/) {
  exports.Set("tripwireStatus", Napi::Function::New(
                                    env,
                                    [](const Napi::CallbackInfo& info) -> Napi::Value {
                                      Napi::Object status = Napi::Object::New(info.Env());
                                      status.Set("built", false);
                                      status.Set("loaded", false);
                                      return status;
                                    },
                                    "tripwireStatus"));
}

// Never made in this build (data->tripwire stays null): what AddonData calls, for the linker.
void Tripwire::Teardown() {}
void Tripwire::FlushOrders() {}

}  // namespace evictd

#else

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "clock.h"
#include "errors.h"
#include "off_loop.h"
#include "tripwire_line.h"
#include "tripwire_ring.h"

namespace evictd {

namespace {

double NowMs() { return static_cast<double>(MonotonicNs()) / 1e6; }

}  // namespace

// Runs inside ring_buffer__consume, from OnPoll. The path every crossing takes to JS: keep it
// short (measured cold under emulation, each step costs 10-25 times its warm cost).
int TripwireRing::OnRecord(void* ctx, void* record, size_t size) {
  auto* ring = static_cast<TripwireRing*>(ctx);
  if (size < sizeof(tripwire_event)) return 0;
  const auto* e = static_cast<const tripwire_event*>(record);
  if (e->slot >= TRIPWIRE_MAX_LINES) return 0;
  TripwireLine* line = ring->slots[e->slot];
  tripwire_line* l = ring->Line(static_cast<int>(e->slot));
  // Released, or re-armed since (ArmSlot reset `pending` already): stale.
  if (line == nullptr || e->generation != l->generation) return 0;
  // Re-arm for the other side of the line as usage is NOW (the program kept updating it while
  // this event waited): a crossing back while we were busy is then caught by the next charge.
  uint64_t usage = __atomic_load_n(&l->usage_pages, __ATOMIC_RELAXED);
  __u32 dir = usage >= l->line_pages ? TRIPWIRE_DOWN : TRIPWIRE_UP;
  __atomic_store_n(&l->direction, dir, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->pending, 0u, __ATOMIC_SEQ_CST);
  // Stamped as the record is read, not once when the poll woke: one consume runs every listener
  // in turn, and a record written during a listener (another line crossed meanwhile) is read in
  // the same loop; the wake's stamp would put it before its own crossing (seen under emulation:
  // 5.5 ms early). The first record's stamp is the wake's plus the ring's own few hundred ns.
  // The listener may close lines or open new ones: nothing here is freed before the next turn.
  line->Crossed(*e, MonotonicNs());
  return 0;
}

void TripwireRing::OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  auto* ring = static_cast<TripwireRing*>(handle->data);
  if (status < 0) {
    // libuv has stopped the handle. An epoll fd of ours is not expected to fail, but if it does
    // the lines must not go deaf quietly.
    ring->owner->FailLines(status);
    return;
  }
  ring->program.bpf->ring_buffer_consume(ring->rb);
}

void TripwireRing::OnLater(uv_idle_t* handle) {
  auto* ring = static_cast<TripwireRing*>(handle->data);
  uv_idle_stop(handle);
  // Listeners may queue more (restarting the idle handle for the turn after) or close lines.
  std::vector<TripwireLine*> batch;
  batch.swap(ring->queue);
  for (TripwireLine* line : batch) line->RunLater();
  Tripwire* owner = ring->owner;
  if (!ring->unload_when_idle || !ring->queue.empty() || owner->ring_ != ring) return;
  ring->unload_when_idle = false;
  // Checked a turn after the last line closed, so a line closed and another opened in one turn
  // keep the program loaded.
  if (ring->lines == 0) owner->Unload();
}

void TripwireRing::OnHandleClosed(uv_handle_t* handle) {
  auto* ring = static_cast<TripwireRing*>(handle->data);
  if (--ring->open_handles == 0) Tripwire::Destroy(ring);
}

// The node poll's period (memcg_tripwire.bpf.c): 1 ms, or EVICTD_TRIPWIRE_NODE_POLL_US (0: off,
// for comparing with charges alone).
uint64_t NodePollNs() {
  const char* env = getenv("EVICTD_TRIPWIRE_NODE_POLL_US");
  if (env == nullptr || *env == '\0') return 1000000;
  char* end = nullptr;
  unsigned long long us = strtoull(env, &end, 10);
  return end != nullptr && *end == '\0' && us <= 1000000 ? us * 1000 : 1000000;
}

TripwireRing* Tripwire::LoadRing() {
  auto* ring = new TripwireRing();
  ring->owner = this;
  TripwireProgram& program = ring->program;
  auto fail = [this, ring](int err, const std::string& stage, const std::string& detail) -> TripwireRing* {
    ring->program.Destroy();
    delete ring;
    error_ = err;
    error_stage_ = stage;
    error_detail_ = detail;
    return nullptr;
  };
  std::string stage;
  std::string detail;
  double t0 = NowMs();
  int err = program.Load(&stage, &detail);
  if (err != 0) return fail(err, stage, detail);
  double t1 = NowMs();
  program.globals->node_poll_ns = NodePollNs();
  err = program.Attach(&stage);
  if (err != 0) return fail(err, stage, "");
  double t2 = NowMs();
  ring->rb = program.bpf->ring_buffer_new(program.events_fd, &TripwireRing::OnRecord, ring, nullptr);
  if (ring->rb == nullptr) return fail(errno, "ring_buffer", "");
  error_ = 0;
  error_stage_.clear();
  error_detail_.clear();
  load_ms_ = t1 - t0;
  attach_ms_ = t2 - t1;
  return ring;
}

void Tripwire::Load(Napi::Env env) {
  if (ring_ != nullptr) return;
  TripwireRing* ring = LoadRing();
  if (ring == nullptr) {
    throw LoadError(env);
  }
  ring_ = ring;
  uv_loop_t* loop = nullptr;
  int err = napi_get_uv_event_loop(env, &loop) == napi_ok ? 0 : UV_EINVAL;
  if (err == 0) {
    uv_idle_init(loop, &ring->later);
    ring->later.data = ring;
    ring->later_open = true;
    ring->open_handles++;
    err = uv_poll_init(loop, &ring->poll, ring->program.bpf->ring_buffer_epoll_fd(ring->rb));
  }
  if (err == 0) {
    ring->poll.data = ring;
    ring->poll_open = true;
    ring->open_handles++;
    // No line holds the loop yet (tripwireLoad() loads with none).
    uv_unref(reinterpret_cast<uv_handle_t*>(&ring->poll));
    err = uv_poll_start(&ring->poll, UV_READABLE, &TripwireRing::OnPoll);
  }
  if (err == 0) {
    // Without its thread the lines still work; only standing orders are refused (setOrder).
    int orders_err = 0;
    // Each use to its line, whatever became of the order since (TripwireLine::OrderFired).
    auto deliver = [ring](const OrderOutcome& outcome) {
      TripwireLine* line = ring->slots[outcome.key];
      if (line != nullptr) line->OrderFired(outcome);
    };
    ring->orders = TripwireOrders::Start(&ring->program, loop, &data_->use_log, deliver, &orders_err);
    if (ring->orders != nullptr)
      ring->open_handles++;
    else
      orders_error_ = orders_err;
  }
  if (err != 0) {
    Unload();
    throw SystemError(env, err, "uv_poll_start", "");
  }
}

void Tripwire::Hold(bool holds) {
  if (ring_ == nullptr) return;
  ring_->holding += holds ? 1 : -1;
  auto* handle = reinterpret_cast<uv_handle_t*>(&ring_->poll);
  if (ring_->holding > 0)
    uv_ref(handle);
  else
    uv_unref(handle);
}

void Tripwire::Later(TripwireLine* line) {
  if (ring_ == nullptr || line->queued_) return;
  line->queued_ = true;
  ring_->queue.push_back(line);
  uv_idle_start(&ring_->later, &TripwireRing::OnLater);
}

void Tripwire::Forget(TripwireLine* line) {
  if (line->holds_) Hold(false);
  line->holds_ = false;
  Release(line);
  if (ring_ != nullptr && line->queued_) {
    auto& q = ring_->queue;
    for (auto it = q.begin(); it != q.end(); ++it) {
      if (*it == line) {
        q.erase(it);
        break;
      }
    }
  }
  line->tripwire_ = nullptr;
}

void Tripwire::UnloadWhenIdle() {
  if (ring_ == nullptr) return;
  ring_->unload_when_idle = true;
  uv_idle_start(&ring_->later, &TripwireRing::OnLater);
}

void Tripwire::FailLines(int status) {
  if (ring_ == nullptr) return;
  // Fail clears the line's slot and runs its listener: walk a copy.
  std::vector<TripwireLine*> lines;
  for (TripwireLine* line : ring_->slots) {
    if (line != nullptr) lines.push_back(line);
  }
  for (TripwireLine* line : lines) line->Fail(status, "poll");
}

void Tripwire::Teardown() {
  if (ring_ != nullptr) Unload();
}

// After the last line (from OnLater), at teardown, or when the load failed half way.
void Tripwire::Unload() {
  TripwireRing* ring = ring_;
  ring_ = nullptr;
  unloading_++;
  // Only teardown finds lines here (OnLater waits for none): they end without JS.
  std::vector<TripwireLine*> batch;
  batch.swap(ring->queue);
  for (TripwireLine*& line : ring->slots) {
    if (line != nullptr) line->EndNow();
    line = nullptr;
  }
  for (TripwireLine* line : batch) line->EndNow();
  ring->lines = 0;
  ring->holding = 0;
  // Joins the order thread (it only ever blocks in epoll_wait or for one kill write).
  if (ring->orders != nullptr) ring->orders->Stop(ring, &TripwireRing::OnHandleClosed);
  if (ring->open_handles == 0) {
    Destroy(ring);
    return;
  }
  if (ring->later_open) uv_close(reinterpret_cast<uv_handle_t*>(&ring->later), &TripwireRing::OnHandleClosed);
  if (ring->poll_open) uv_close(reinterpret_cast<uv_handle_t*>(&ring->poll), &TripwireRing::OnHandleClosed);
}

// Frees the BPF side. Detaching an fexit link waits for an RCU-tasks grace period: off the loop
// (a threadpool thread), unless the environment is going away: then at once, on its thread.
void Tripwire::Destroy(TripwireRing* ring) {
  Tripwire* self = ring->owner;
  AddonData* data = self->data_;
  auto destroy = [ring]() {
    ring->program.bpf->ring_buffer_free(ring->rb);
    ring->program.Destroy();
  };
  auto done = [ring, self, data]() {
    delete ring->orders;
    delete ring;
    self->unloading_--;
    data->MaybeDone();  // may delete data and this tripwire: last
  };
  if (data->tearing_down) {
    destroy();
    done();
  } else {
    RunOffLoop(data->env, destroy, done);
  }
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
