// The fuzzing entry point over the header parsing `snapshot::inspect` uses (format::parse_header:
// root attribute values + manifest JSON via tensorhub::manifest_from_json), shared by the
// libFuzzer binary (fuzz_snapshot_header.cpp, -DTENSORHUB_FUZZ=ON) and the corpus replay test
// that runs in every build (replay_corpus.cpp).
//
// Input format (text): optional "key=value" lines for the root attributes, an empty line, then
// the manifest attribute's text. Keys: format_version, model, version, chunk_bytes, created_by,
// created_at. A missing format_version means 1; "key=" with a non-number for a numeric key means
// the attribute is absent. Without an empty line the whole input is the manifest text.
//
// A SnapshotError is the expected outcome for bad input. Anything else escaping, or an accepted
// header that breaks an invariant (JSON round trip, dataset name escaping, I/O piece plan and
// hyperslab cover), aborts: that is a bug.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorhub::snapshot::fuzz {

int run_header_input(const std::uint8_t* data, std::size_t size);

}  // namespace tensorhub::snapshot::fuzz
