# h5regress: json-cwx (MACSio's JSON library), extending Spack's builtin
# recipe with the upstream git repository so that it can be pinned by commit
# (the environment requires json-cwx@git.<sha>=0.12).
from spack.package import *

try:  # Spack >= 1.0
    from spack_repo.builtin.packages.json_cwx.package import JsonCwx as BuiltinJsonCwx
except ImportError:  # Spack 0.x
    from spack.pkg.builtin.json_cwx import JsonCwx as BuiltinJsonCwx


class JsonCwx(BuiltinJsonCwx):
    git = "https://github.com/LLNL/json-cwx.git"
