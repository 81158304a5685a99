"""Names tensorpack gives to graph objects.

``MOVING_SUMMARY_OPS_KEY`` is the collection ``add_moving_summary`` fills and
``MovingAverageSummary`` runs. ``GLOBAL_STEP_INCR_OP_NAME`` is the name of tensorpack's op that
advanced the global step; tfloop advances it inside the training op, so no op carries it.
"""
__all__ = ["GLOBAL_STEP_INCR_OP_NAME", "MOVING_SUMMARY_OPS_KEY"]

GLOBAL_STEP_INCR_OP_NAME = "global_step_incr"
MOVING_SUMMARY_OPS_KEY = "MOVING_SUMMARY_OPS"
