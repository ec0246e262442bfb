// The hubs alive in this process, by coordinator and endpoint: what Hub::join checks a second
// hub on the same coordinator against. A hub's mpi_rma path reaches only its own window (the
// MPI job it joined with): two hubs in one process are two jobs to it, so a hub whose paths do
// not reach another hub of the process on the same coordinator could never read what that one
// publishes (nor be read by it), and is refused at join instead of failing every pull later.
// One registry per process (ProcessHubs::of_this_process), guarded by its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tensorhub {

class ProcessHubs {
 public:
  struct Entry {
    std::string coordinator;  // the address the hub's client calls
    std::string endpoint;     // its Transport::endpoint()
    std::string paths;        // its Transport::name(), for messages
  };

  // Removes its entry when it goes.
  class Registration {
   public:
    Registration() = default;
    Registration(ProcessHubs* hubs, std::uint64_t id) : hubs_(hubs), id_(id) {}
    Registration(Registration&& o) noexcept : hubs_(o.hubs_), id_(o.id_) { o.hubs_ = nullptr; }
    Registration& operator=(Registration&& o) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();

   private:
    ProcessHubs* hubs_ = nullptr;
    std::uint64_t id_ = 0;
  };

  static ProcessHubs& of_this_process();

  Registration add(Entry e);
  // The live hubs of this process on `coordinator`.
  std::vector<Entry> on(const std::string& coordinator) const;

 private:
  void remove(std::uint64_t id);

  mutable std::mutex mu_;
  std::uint64_t next_ = 1;
  std::map<std::uint64_t, Entry> hubs_;
};

}  // namespace tensorhub
