"""Files out, written atomically: model files (`save`, `load`, also `jkern.save` and
`jkern.load`), matrices (`write_matrix`: `.npy`, or `.tsv` with values that round-trip) and
any other output (`write_atomic`). A failed write leaves no partial file: the data goes to a
temporary file in the target's folder, flushed and fsynced, then `os.replace`d onto it (what
every `jkern` command's output goes through). See docs/save.md."""

from ._io import load as load
from ._io import save as save
from ._io import write_atomic as write_atomic
from ._io import write_matrix as write_matrix

__all__ = ["load", "save", "write_atomic", "write_matrix"]
