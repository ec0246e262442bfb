// A fault-injection point for the hub's fault tests (tests/fault/hub_fault.sh), off unless
// TENSORHUB_TEST_PAUSE_DIR is set. Then the first progress report of a pull (its first chunks
// have landed; sources are planned and pinned, nearly every chunk still to read) creates
// DIR/paused.<pid> and holds the pulling thread while DIR/hold exists. The test kills a holder
// the paused readers have pinned, then removes DIR/hold: the kill lands mid-pull for certain
// instead of racing a pull that lasts a tenth of a second. Heartbeats go on meanwhile (their own
// thread), so a paused reader stays alive to the coordinator.
#pragma once

#include <string>

namespace tensorhub::cli {

class FaultPause {
 public:
  static FaultPause from_environment();  // off when the variable is unset or empty
  // Call from the pull's progress callback; pauses at the first call only.
  void at_progress();

 private:
  std::string dir_;
  bool done_ = false;
};

}  // namespace tensorhub::cli
