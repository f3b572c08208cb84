#!/bin/bash
# On a CUDA machine with no network: build llama-cpp-python with CUDA (or install a wheel built
# before), write random-weight models of Qwen2.5-Coder's shapes, then measure what spec-lsp's
# decode loop does there: `spec-lsp profile` and `spec-lsp bench gpu-loop` (bench/README.md).
#
# Run from the repository root: `bash bench/gpu/run.sh`. It reads $GPU_IN (default .gpu):
#   llama_cpp_python-0.3.36/   the sdist (vendor/llama.cpp's models, docs, tests may be removed)
#   *.whl.part*                or a wheel this script built before, in parts (it writes them)
#   whl/*.whl                  the Python packages the machine lacks (pydantic, jedi, ...)
#   template-NAME/             a model's metadata and tensor list, made here from the real file:
#                              `python bench/gpu/random_weights.py template REAL.gguf .gpu/template-1.5b`
# and writes run.log, the wheel's parts and one JSON per model (MODELS: the NAMEs) to $OUT.
set -u
IN=${GPU_IN:-.gpu}
OUT=${OUT:-/tmp/gpu_out}
MODELS=${MODELS:-1.5b}
PAIRS=${PAIRS:-5}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
T0=$(date +%s)
say() { echo "[t=$(($(date +%s) - T0))s] $*"; }

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
say "cpus: $(nproc); $(python3 --version); nvcc: $(nvcc --version | tail -1)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$IN"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD

# the models, meanwhile (the writer imports llama.cpp's gguf-py)
GGUF_PY=$(ls -d "$IN"/llama_cpp_python-*/vendor/llama.cpp/gguf-py 2>/dev/null | head -1)
mkdir -p /dev/shm/qm
(for m in $MODELS; do
    PYTHONPATH=${GGUF_PY:-/nonexistent}:$PYTHONPATH python3 bench/gpu/random_weights.py write \
        "$IN/template-$m" "/dev/shm/qm/$m.gguf"
 done >/tmp/gen.log 2>&1
 echo "gen rc=$?" >>/tmp/gen.log) &
GEN=$!

# cuBLAS: the toolkit's, or the pip wheels' (nvidia-cublas)
CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
CUBLAS=$(ls -1 "$CUDA_ROOT"/lib64/libcublas.so* "$CUDA_ROOT"/targets/x86_64-linux/lib/libcublas.so* \
    2>/dev/null | head -1)
[ -z "$CUBLAS" ] && CUBLAS=$(find /opt /usr -name 'libcublas.so*' 2>/dev/null | sort | head -1)
CBDIR=$(dirname "${CUBLAS:-/x/x}")
export LD_LIBRARY_PATH=$CBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
say "cuda root $CUDA_ROOT, cublas $CUBLAS"

mkdir -p /tmp/wheel
if ls "$IN"/*.whl.part* >/dev/null 2>&1; then
    part=$(ls "$IN"/*.whl.part* | sort | head -1)
    name=$(basename "${part%.part*}")
    cat $(ls "$IN"/*.whl.part* | sort) >"/tmp/wheel/$name"
    say "wheel from before: $name"
else
    ARGS="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_FA=OFF -DGGML_NATIVE=OFF"
    ARGS="$ARGS -DLLAVA_BUILD=OFF -DLLAMA_BUILD_MTMD=OFF -DGGML_CUDA_NCCL=OFF"
    ARGS="$ARGS -DCMAKE_CUDA_FLAGS=-allow-unsupported-compiler"
    if [ -n "$CUBLAS" ]; then
        LT=$(ls -1 "$CBDIR"/libcublasLt.so* 2>/dev/null | head -1)
        ARGS="$ARGS -DCUDA_cublas_LIBRARY=$CUBLAS ${LT:+-DCUDA_cublasLt_LIBRARY=$LT}"
        INC=$(find "$CBDIR/.." "$CUDA_ROOT/include" -name cublas_v2.h 2>/dev/null | head -1)
        if [ -n "$INC" ] && [ "$(dirname "$INC")" != "$CUDA_ROOT/include" ]; then
            mkdir -p /tmp/cublas_inc && ln -sf "$(dirname "$INC")"/cublas* /tmp/cublas_inc/
            ARGS="$ARGS -DCMAKE_CUDA_FLAGS=-allow-unsupported-compiler\ -I/tmp/cublas_inc"
            ARGS="$ARGS -DCMAKE_CXX_FLAGS=-I/tmp/cublas_inc"
        fi
    fi
    say "building llama-cpp-python with CUDA: $ARGS"
    CMAKE_ARGS="$ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout ${BUILD_LIMIT:-420} \
        python3 -m pip wheel -v --no-build-isolation --no-deps --no-index -w /tmp/wheel \
        "$IN"/llama_cpp_python-0.3.36 >/tmp/build.log 2>&1
    rc=$?
    say "build rc=$rc"
    if [ $rc != 0 ]; then grep -E -i -B3 -A10 "error|failed" /tmp/build.log | head -60; exit 1; fi
    whl=$(ls /tmp/wheel/llama_cpp_python-*.whl)
    ls -la "$whl"
    split -b 15M -d "$whl" "$OUT/$(basename "$whl").part"
fi
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/wheel/*.whl \
    || exit 1
python3 -c "import llama_cpp; print('llama_cpp', llama_cpp.__version__, 'gpu offload:', \
llama_cpp.llama_supports_gpu_offload())"

wait $GEN
cat /tmp/gen.log
for m in $MODELS; do
    M=/dev/shm/qm/$m.gguf
    say "=== $m: spec-lsp profile"
    HOME=/tmp/home-$m SPEC_LSP_GPU_LAYERS=-1 python3 -c \
        'import sys; from spec_lsp.cli import main; sys.exit(main(sys.argv[1:]))' profile --model "$M"
    say "=== $m: spec-lsp bench gpu-loop"
    python3 -m bench gpu-loop --model "$M" --gpu-layers -1 --threads 16 --pairs "$PAIRS" \
        --json "$OUT/gpu_loop_$m.json"
done
say "end"
