"""What loading jkern's library does once, whichever way it is reached (`jkern.<name>`, or an
import of a subpackage that computes: `jkern.kernels`, `jkern.svm`, `jkern.kda`, `jkern.ds`,
`jkern.pa`, or of `jkern._executables`): the persistent compilation cache on
by default (`_cache.enable_default`) and compiled programs counted (`_programs.install`).
`import jkern` alone does neither: it imports no JAX (the command line's `--help` and
`--version` stay fast)."""

from . import _cache, _programs

_cache.enable_default()
_programs.install()
