#!/usr/bin/env bash
# cuda/lazy_no_cuda_libs: a CUDA-enabled build runs on a machine without the CUDA libraries.
#
#   no_cuda_libs.sh LAYA MODULE FAKEDRV_DIR CKPT
#
# In a private mount namespace (unshare -m; skipped, exit 77, where that is not permitted), the
# directories holding the libraries the module needs (libcudart, libcublasLt: ldd MODULE) are
# covered by an empty directory. Then `laya --preset triage` answers on the CPU, and with a
# stand-in driver that counts one GPU (FAKEDRV_DIR/libcuda.so.1), `--device cuda` falls back to
# the CPU with the loader's message naming the missing CUDA library.
set -u
laya=$1 module=$2 fakedrv=$3 ckpt=$4
if [ "${LAYA_IN_NS:-}" != 1 ]; then
  if ! unshare -m --propagation private true 2>/dev/null; then
    echo "unshare -m is not permitted here: skipped"; exit 77
  fi
  exec env LAYA_IN_NS=1 unshare -m --propagation private "$0" "$@"
fi
dirs=$(ldd "$module" | awk '/libcudart|libcublas/ && /=> \//{print $3}' | while read -r so; do
  dirname "$so"; dirname "$(readlink -f "$so")"; done | sort -u)
[ -n "$dirs" ] || { echo "FAIL: ldd $module lists no libcudart / libcublasLt"; exit 1; }
for d in $dirs; do # the CUDA libraries beside the system's own (distribution packages): cannot be hidden alone
  if [ -e "$d/libc.so.6" ] || [ -e "$d/libstdc++.so.6" ] || [ -e "$d/libcurl.so.4" ]; then
    echo "the CUDA libraries share $d with system libraries: skipped"; exit 77
  fi
done
empty=$(mktemp -d)
for d in $dirs; do mount --bind "$empty" "$d" || { echo "cannot cover $d: skipped"; exit 77; }; done
echo "covered: $dirs"
if ldd "$module" | grep -q "libcudart.*=> /"; then echo "FAIL: libcudart still found"; exit 1; fi
fails=0
out=$("$laya" --model "$ckpt" --preset triage "I was charged twice" 2>&1)
rc=$?
echo "$out" | sed 's/^/  cpu: /'
if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^intent"; then echo "FAIL: laya did not answer on the CPU (rc $rc)"; fails=1; fi
out=$(LD_LIBRARY_PATH=$fakedrv "$laya" --device cuda --model "$ckpt" --preset triage "I was charged twice" 2>&1)
rc=$?
echo "$out" | grep Warning | sed 's/^/  cuda: /'
if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^intent"; then echo "FAIL: --device cuda did not fall back (rc $rc)"; fails=1; fi
if ! echo "$out" | grep -q "Warning: the CUDA backend cannot run here: the CUDA backend module .*liblaya_cuda.so could not be loaded: libcu[a-zA-Z]*\.so\.[0-9]*: cannot open shared object file"; then
  echo "FAIL: no message naming the missing CUDA library"; fails=1
fi
echo "cuda/lazy_no_cuda_libs: $([ $fails = 0 ] && echo ok || echo FAILED)"
exit $fails
