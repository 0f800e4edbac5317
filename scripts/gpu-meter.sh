#!/usr/bin/env bash
# gpu-meter.sh: make gpu-meter's tests from prebuilt binaries (make
# gpu-tests), for a GPU machine without Go. Run from the repository root;
# writes each test's log to $1 (default .) as nvmlmeter.log and market.log.
set -uo pipefail
out="${1:-.}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' || true
# TestGPUContainer needs runc and a static busybox: a bare machine gets
# them from the packages make gpu-tests downloaded.
if ! command -v runc >/dev/null || ! command -v busybox >/dev/null; then
	for deb in bin/gpu/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /tmp/gpu-debs; done
	export PATH="$PATH:/tmp/gpu-debs/usr/sbin:/tmp/gpu-debs/usr/bin:/tmp/gpu-debs/bin"
fi
status=0
(cd server/nvmlmeter && ../../bin/gpu/nvmlmeter.test -test.run 'RealLoad|SetsidLoad' -test.v -test.count 1) 2>&1 | tee "$out/nvmlmeter.log" || status=1
(cd cmd/bourse && ../../bin/gpu/bourse.test -test.run 'GPUMarket|GPUContainer' -test.v -test.count 1 -test.timeout 15m) 2>&1 | tee "$out/market.log" || status=1
exit $status
