"""setup.py — the build step of pyproject.toml: `make build/py/libtopkp_ops.so` (with the CUDA
kernels where nvcc is, CPU_ONLY=1 without it or with TOPKP_CPU_ONLY=1), copied into the
package; the wheel is tagged py3-none (ctypes: one build for every Python, docs/PYTHON.md)."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithMake(build_py):
    def run(self):
        cpu_only = os.environ.get("TOPKP_CPU_ONLY") or not shutil.which("nvcc")
        build = "build/py-cpu" if cpu_only else "build/py"
        cmd = ["make", f"-j{os.environ.get('TOPKP_JOBS', '2')}", f"BUILD={build}",
               f"{build}/libtopkp_ops.so"] + (["CPU_ONLY=1"] if cpu_only else [])
        subprocess.check_call(cmd, cwd=ROOT)
        super().run()
        dest = os.path.join(self.build_lib, "topkp")
        os.makedirs(dest, exist_ok=True)
        shutil.copy(os.path.join(ROOT, build, "libtopkp_ops.so"), dest)


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


setup(cmdclass={"build_py": BuildWithMake, "bdist_wheel": PlatformWheel})
