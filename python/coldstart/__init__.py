"""coldstart's Python side: the torch.distributed probe (`bench --worker torch`) and the Ray launcher
(`bench --launcher ray`). Both speak the coordinator protocol of coldstart's lab (protocol.py)."""
