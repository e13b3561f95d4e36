"""tg.uop: the UOp IR core."""
