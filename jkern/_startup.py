"""What loading jkern's library does once, whichever way it is reached (`jkern.<name>`, or an
import of a subpackage that computes: `jkern.kernels`, `jkern.svm`, `jkern.kda`, `jkern.ds`,
`jkern.pa`, or of `jkern._executables`): compiled programs counted (`_programs.install`, a
listener on JAX's monitoring events; it changes nothing JAX does).

No JAX setting changes on import: the persistent compilation cache is turned on at jkern's
first computation (`_cache.ensure_default`), or explicitly by `jkern.enable_compilation_cache`.
`import jkern` alone imports no JAX (the command line's `--help` and `--version` stay fast)."""

from . import _programs

_programs.install()
