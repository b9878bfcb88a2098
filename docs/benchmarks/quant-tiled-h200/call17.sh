#!/bin/bash
# Call 17 (final): the gpu suite native + compute_75 PTX at the final kernel.
set -u
cd "$(dirname "$0")/.."
echo "commit $(cat .peers/commit)"
rm -rf /tmp/fk-native /tmp/fk-ptx75
timeout 300 sh tests/gpu/run-on-device.sh test
