"""Privacy accounting that travels (docs/reference/ledger.md): the ledger file's records,
a budget across days on the device, and adapters to OpenDP and dp_accounting."""
from .device import CapExceededError, DeviceLedger, privatize_on_device
from .records import LedgerError, compose, in_model, read

__all__ = ["CapExceededError", "DeviceLedger", "LedgerError", "compose", "in_model",
           "privatize_on_device", "read"]
