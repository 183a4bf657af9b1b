# lit configuration for distopt's FileCheck tests.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "distopt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.distopt_obj_root, "test", "lit")
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.use_default_substitutions()
config.substitutions.append(("%test_data", config.distopt_test_data))
config.substitutions.append(("%examples", config.distopt_examples))
config.substitutions.append(("%plugin_dir", config.distopt_plugin_dir))
# The Python lit runs under (with numpy and onnx, as the training cases'
# generators need) and the repository's scripts.
import sys
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%scripts", os.path.join(os.path.dirname(os.path.dirname(config.test_source_root)), "scripts")))
# `dist-run --backend mpi` tests need mpirun (REQUIRES: mpi).
if config.distopt_mpirun:
    config.available_features.add("mpi")
    config.substitutions.append(("%mpirun", config.distopt_mpirun))
    if config.distopt_has_nccl_backend:
        config.available_features.add("nccl")

tool_dirs = [config.distopt_tools_dir, config.llvm_tools_dir]
tools = ["dist-opt", "dist-run", "dist-train", "checkpoint-faults", "onnx-import-test", "mlir-opt", "FileCheck", "not", "split-file", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.distopt_tools_dir, append_path=True)
