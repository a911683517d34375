#!/bin/sh
# Stands in for ptxas in a fake toolkit: rejects everything with a message.
echo "ptxas fatal   : stand-in assembler refuses $*" >&2
exit 255
