"""The command table: one registration per subcommand (name -> function(host, request))."""

from .accounts import cmd_create
from .control import cmd_keys, cmd_resume, cmd_status_all, cmd_suspend
from .ending import cmd_destroy, cmd_extend, cmd_status
from .inventory import cmd_inventory
from .services import cmd_prepare

COMMANDS = {
    "inventory": cmd_inventory,
    "create": cmd_create,
    "prepare": cmd_prepare,
    "extend": cmd_extend,
    "status": cmd_status,
    "destroy": cmd_destroy,
    "suspend": cmd_suspend,
    "resume": cmd_resume,
    "keys": cmd_keys,
    "status_all": cmd_status_all,
}
