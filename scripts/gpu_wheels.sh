#!/usr/bin/env bash
# The wheels a GPU machine without network needs for scripts/gpu_acceptance.sh: what gpuscout and
# its JAX backend import that such a machine's image lacks (JAX, NumPy, SciPy, rich, Jinja2,
# matplotlib, psutil, NVML's bindings, h5py and ml-dtypes it has), for its Python and platform.
#
#   scripts/gpu_wheels.sh DIR [--python-version 3.12]
#
# Run it here, where the package index is reached; carry DIR to the GPU machine and there:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site DIR/*.whl
#   PYTHONPATH=/tmp/site:$PWD/src scripts/gpu_acceptance.sh OUT
# (or scripts/gpu_acceptance.sh OUT --wheels DIR, which pip-installs gpuscout from them).
#
# Each package is pinned to the version this checkout's tests ran with where it is installed
# here (the .venv's), so the GPU run uses what CI tested; --no-deps, so the list is the whole
# set: pydantic pins pydantic-core exactly, and typing-extensions is carried as pydantic needs
# a recent one. About 15 MB.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="" pyver=3.12
while (($#)); do
    case "$1" in
        --python-version)
            (($# > 1)) || { echo "gpu_wheels: --python-version needs a value, e.g. 3.12" >&2; exit 2; }
            pyver="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) echo "gpu_wheels: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) dir="$1"; shift ;;
    esac
done
[ -n "$dir" ] || { echo "gpu_wheels: give the folder to fill: $0 DIR" >&2; exit 2; }
PACKAGES="keras namex optree pydantic pydantic-core annotated-types typing-inspection
typing-extensions platformdirs SQLAlchemy psycopg psycopg-binary python-hostlist"
python="${PYTHON:-$here/.venv/bin/python}"
[ -x "$python" ] || python=python3
specs=()
for name in $PACKAGES; do
    version="$("$python" -c "import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass" "$name")"
    specs+=("$name${version:+==$version}")
done
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 \
         manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
mkdir -p "$dir"
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp "${platforms[@]}" -d "$dir" "${specs[@]}"
echo "gpu_wheels: ${specs[*]} for CPython $pyver in $dir ($(du -sh "$dir" | cut -f1))" >&2
