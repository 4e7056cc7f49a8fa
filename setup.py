"""The one compiled part of h5lake: MD5 of many chunks at once (``h5lake.storage._md5lanes``).

Optional: where it cannot be built, ``h5lake.storage.md5`` hashes with ``hashlib`` instead (the
same digests, about four times the CPU per byte of a bulk write). Everything else is in
pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "h5lake.storage._md5lanes",
            ["src/h5lake/storage/_md5lanes.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
