# lit configuration of flashc's FileCheck tests.
import os
import platform

import lit.formats
from lit.llvm import llvm_config

config.name = "FLASH"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flash_obj_root, "test")
# Inputs hold files that tests read; unit/runtime/gpu are ctest's.
config.excludes = ["Inputs", "CMakeLists.txt", "unit", "runtime", "gpu"]

config.substitutions.append(("%kernels", os.path.join(config.flash_src_root, "kernels")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.flash_tools_dir, config.llvm_tools_dir]
tools = ["flash-opt", "flashc", "mlir-opt", "mlir-translate"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The host's architecture, for tests of the CPU target's code.
config.available_features.add("host-" + platform.machine())

if config.ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
    # The toolkit ptxas belongs to (bin/ptxas -> the root with nvvm/libdevice).
    config.substitutions.append(
        ("%cuda_root", os.path.dirname(os.path.dirname(config.ptxas))))
