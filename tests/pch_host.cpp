// The host of the unit tests' precompiled header (share/cmake/TensorHubTesting.cmake,
// TENSORHUB_TEST_PCH): CMake compiles the header for this target and every unit test executable
// reuses it. Nothing else is compiled here.
