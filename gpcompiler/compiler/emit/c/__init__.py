"""The C target (docs/reference/c.md): NAME.h, NAME.c and the protocol program NAME_main.c."""
