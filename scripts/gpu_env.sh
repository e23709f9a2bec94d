# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh and scripts/multi_gpu_check.sh: what every process on a GPU
# machine needs. NVLink multicast stays off (the machines' GPUs are shared, and a program that
# uses it can put them out of service; issue #25), and nccl_lib_dir finds a libnccl.so.2 for the
# binaries, which all link it (218 MB, so not packed).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# The directory of a libnccl.so.2 to load: ours if packed under ROOT/gpu/lib, else the machine's
# (PyTorch's nvidia-nccl wheel, or a system copy).
nccl_lib_dir() {
  local root=$1 d
  for d in "$root/gpu/lib" \
           "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)" \
           /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then echo "$d"; return 0; fi
  done
  d=$(find / -xdev -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -n 1 || true)
  [ -n "$d" ] && dirname "$d"
}

# Copies the files of each DIR that was carried into DEST (made when one was): the staging
# calls' gathering of what travels in several device calls.
copy_carried() {
  local dest=$1 d
  shift
  for d in "$@"; do
    if [ -d "$d" ]; then mkdir -p "$dest" && cp "$d"/* "$dest/"; fi
  done
}

# Where `scripts/gpu_check.sh stage` gathers the pack's carried halves on the device.
gpu_pack_parts=${gpu_pack_parts:-/tmp/sgl_gpu_parts}

# Unpacks PACK (scripts/gpu_check.sh pack's .carry/gpu.txz) into ROOT, afresh, and points the
# binaries at its libraries, NCCL and test data. Without PACK, the halves staged in
# $gpu_pack_parts are joined (the pack and the working tree together pass the device tool's
# 64 MiB a call).
unpack_gpu_pack() {
  local root=$1 pack=$2 nccl_dir
  if [ ! -f "$pack" ] && compgen -G "$gpu_pack_parts/gpu.txz.part*" >/dev/null; then
    cat "$gpu_pack_parts"/gpu.txz.part* >"$gpu_pack_parts/gpu.txz"
    pack=$gpu_pack_parts/gpu.txz
  fi
  rm -rf "$root" && mkdir -p "$root" && tar xJf "$pack" -C "$root"
  nccl_dir=$(nccl_lib_dir "$root" || true)
  export LD_LIBRARY_PATH="$root/gpu/lib${nccl_dir:+:$nccl_dir}:${LD_LIBRARY_PATH:-}"
  export SGL_TESTDATA_DIR="$root/testdata" SGL_EMBEDDING_MODELS="$root/testdata/embedding_models" \
    SGL_CLASSIFIER_MODELS="$root/testdata/classifier_models" SGL_EAGLE_HEADS="$root/testdata/eagle_heads"
}
