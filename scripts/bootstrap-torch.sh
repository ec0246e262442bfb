#!/usr/bin/env bash
# The Python environment of the tests that run real models (tests/python/test_torch.py, label
# python): a venv over Debian's python3 (the interpreter lib/python is built for), with its system
# packages (numpy, pytest, mpi4py) and torch + transformers from PyPI. scripts/bootstrap.sh runs
# it; it does nothing (well under a second) when the venv already has the pinned versions.
set -euo pipefail

VENV=${TENSORHUB_TORCH_VENV:-$HOME/.cache/tensorhub/torch-venv}
BASE=${TENSORHUB_TORCH_BASE_PYTHON:-/usr/bin/python3}
PINS=(torch==2.15.0 transformers==5.23.0)
want="${PINS[*]}"

usage() {
  cat <<TXT
Usage: scripts/bootstrap-torch.sh [--check | --print | --help]

Makes $VENV: a venv over $BASE
(--system-site-packages) with ${PINS[*]} from PyPI (about 3 GB of wheels, CUDA
libraries included: PyPI's Linux torch is the CUDA build, which runs on CPU too; about 75 s
here). The venv is kept: later runs find the pins recorded in it and do nothing.

  --check   exit 1 (with a message) if the venv is missing or has other versions
  --print   print the venv's python and exit (what tests/python/CMakeLists.txt runs)

Environment: TENSORHUB_TORCH_VENV (the venv), TENSORHUB_TORCH_BASE_PYTHON (its
interpreter: the one CMake builds lib/python for).
TXT
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --print) echo "$VENV/bin/python"; exit 0 ;;
  --check | "") ;;
  *) echo "bootstrap-torch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

stamp=$VENV/.tensorhub-pins
if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
if [[ "${1:-}" == --check ]]; then
  echo "bootstrap-torch.sh: $VENV lacks $want (run scripts/bootstrap-torch.sh)" >&2
  exit 1
fi
[[ -x "$BASE" ]] || { echo "bootstrap-torch.sh: $BASE not found (TENSORHUB_TORCH_BASE_PYTHON)" >&2; exit 1; }
echo "bootstrap-torch.sh: installing $want into $VENV" >&2
"$BASE" -m venv --system-site-packages "$VENV" ||
  { echo "bootstrap-torch.sh: '$BASE -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$VENV/bin/python" -m pip install --quiet "${PINS[@]}" ||
  { echo "bootstrap-torch.sh: pip install ${PINS[*]} failed (PyPI unreachable?)" >&2; exit 1; }
"$VENV/bin/python" -c "import torch, transformers" ||
  { echo "bootstrap-torch.sh: torch or transformers does not import in $VENV" >&2; exit 1; }
echo "$want" >"$stamp"
echo "bootstrap-torch.sh: done" >&2
