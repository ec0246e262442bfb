// Built by test_package.sh against an installed TensorHub, with nothing but
//   mpicxx -std=c++20 pkgconfig_consumer.cpp $(pkg-config --cflags --libs tensorhub)
// Checks that the headers compile, libtensorhub.so links and loads, and that an exception
// thrown inside the library is caught by its type in the caller.
#include <cstdio>
#include <tensorhub/config.hpp>
#include <tensorhub/core/units.hpp>
#include <tensorhub/hub.hpp>

int main() {
  auto join = &tensorhub::Hub::join;  // the MPI-facing API resolves at link time too
  float w[6] = {};
  const tensorhub::Tensor t = tensorhub::host_tensor("w", tensorhub::DType::kF32, {2, 3}, w);
  bool caught = false;
  try {
    tensorhub::parse_bytes("12XB");
  } catch (const tensorhub::UserError&) {
    caught = true;
  }
  std::printf("pkg-config consumer: tensorhub %s, %s %s, UserError caught: %s\n", TENSORHUB_VERSION,
              t.spec.name.c_str(), tensorhub::describe(t.spec).c_str(), caught ? "yes" : "no");
  return join != nullptr && caught ? 0 : 1;
}
