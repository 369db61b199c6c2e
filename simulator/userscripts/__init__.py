"""Users' own limiter scripts: declared, checked, registered beside the built-in algorithms.

See ``docs/your_script.md`` for the contract; :func:`register_script` puts a script on the bench
(behind the guard of :mod:`simulator.userscripts.guard`: its own KEYS, a limiter's commands, on
every backend) and :mod:`simulator.userscripts.check` grades one against a reference.
"""

from simulator.userscripts.declaration import (
    ARGV_NAMES,
    KEY_FIELDS,
    REPLY_FIELDS,
    Declaration,
    DeclarationError,
    read_declaration,
)
from simulator.userscripts.limiter import (
    SCRIPT_COLOURS,
    UserScript,
    UserScriptError,
    register_script,
    user_scripts,
)

__all__ = [
    "ARGV_NAMES",
    "KEY_FIELDS",
    "REPLY_FIELDS",
    "Declaration",
    "DeclarationError",
    "read_declaration",
    "SCRIPT_COLOURS",
    "UserScript",
    "UserScriptError",
    "register_script",
    "user_scripts",
]
