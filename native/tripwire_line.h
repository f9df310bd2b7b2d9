// One memcg tripwire line as JS sees it: a watcher's face (start, stop, close, ref, unref,
// hasRef, read, closed) plus rearm() and setOrder() (tripwire_orders.h). It has no fd and no uv
// handle of its own: the environment's Tripwire polls the ring buffer and calls Crossed() for this
// line's records, holds the loop for it, and runs what must wait for the next loop turn; the line
// knows it only as its TripwireLineHost. Only built with EVICTD_TRIPWIRE; loop thread only.
#pragma once

#include <cstdint>
#include <string>

namespace evictd {

class TripwireLine;

// What a line asks of the environment's tripwire (tripwire.h implements it): the line is below
// it, and knows it only by this.
class TripwireLineHost {
 public:
  // The line stops firing now and frees its slot.
  virtual void Release(TripwireLine* line) = 0;
  // It starts or stops holding the loop (started, ref'd and open).
  virtual void Hold(bool holds) = 0;
  // Run its RunLater() on the next loop turn.
  virtual void Later(TripwireLine* line) = 0;
  // Its object is finalized while still attached.
  virtual void Forget(TripwireLine* line) = 0;
  // Moves the line of `slot` in place (Tripwire::Rearm).
  virtual void Rearm(int slot, double line_bytes, double usage_bytes) = 0;
  // Places or withdraws `slot`'s standing order (Tripwire::SetOrder).
  virtual int64_t SetOrder(int slot, int kill_fd, const std::string& path, double ttl_ms, const std::string& memory_dir,
                           uint64_t working_set_line, const std::string& tag, int* err) = 0;

 protected:
  ~TripwireLineHost() = default;
};

}  // namespace evictd

#ifdef EVICTD_TRIPWIRE
#include <linux/types.h>
#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/memcg_tripwire.h"

namespace evictd {

struct OrderOutcome;

class TripwireLine : public Napi::ObjectWrap<TripwireLine> {
 public:
  static Napi::Function DefineClass(Napi::Env env);

  explicit TripwireLine(const Napi::CallbackInfo& info);
  ~TripwireLine() override;

  // A new line, in two steps around the arming: Prepare may throw (nothing is armed yet);
  // Attach binds it to its slot, and from then on it lives until closed.
  void Prepare(const std::string& dir, Napi::Function callback);
  void Attach(TripwireLineHost* tripwire, int slot);

  // A crossing of this line, from the ring buffer's poll callback, read at `now_ns`: to
  // the JS callback now if started, else held for start().
  void Crossed(const tripwire_event& e, uint64_t now_ns);
  // The next loop turn (Tripwire::Later): the close callbacks once closed, or the crossings held
  // while stopped once started again.
  void RunLater();
  // The ring buffer's poll failed: the line ends with that error.
  void Fail(int err, const char* syscall);
  // Environment teardown: the line ends now, no JS runs.
  void EndNow();
  // The order thread used this line's standing order (delivered on the loop): to the order's
  // callback, if the line still holds that order.
  void OrderFired(const OrderOutcome& outcome);

 private:
  friend class Tripwire;

  bool open() const { return tripwire_ != nullptr && !closing_; }
  void UpdateHold();
  void BeginClose();
  void Finish(bool run_js);
  void Dispatch(uint64_t count, uint64_t monotonic_ns, const char* text, size_t text_len);

  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value JsRef(const Napi::CallbackInfo& info);
  Napi::Value JsUnref(const Napi::CallbackInfo& info);
  Napi::Value HasRef(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value Rearm(const Napi::CallbackInfo& info);
  Napi::Value SetOrder(const Napi::CallbackInfo& info);
  Napi::Value IsClosed(const Napi::CallbackInfo& info);

  TripwireLineHost* tripwire_ = nullptr;  // null until attached and once ended
  int slot_ = -1;                         // in the program's line table; -1 once released
  std::string dir_;                       // the cgroup directory, the path of its errors
  bool started_ = false;
  bool refed_ = true;
  bool holds_ = false;    // counted by the tripwire as holding the loop
  bool queued_ = false;   // waiting for the tripwire's next-turn work
  bool closing_ = false;  // close requested: released, close callbacks on the next turn
  bool closed_ = true;    // ended (an object never attached counts as ended)
  uint64_t held_ = 0;     // crossings while stopped, delivered as one event's count on start()
  bool crossed_ = false;
  tripwire_event last_ = {};  // the last crossing: read() and a held delivery carry it
  Napi::FunctionReference callback_;
  Napi::FunctionReference order_callback_;
  uint32_t order_generation_ = 0;  // the order in force (0: none)
  std::vector<Napi::FunctionReference> close_callbacks_;
  std::unique_ptr<Napi::AsyncContext> async_context_;
};

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
