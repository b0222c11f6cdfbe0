"""The reconcile engine: one step moves every live job forward (step.py).

- ``step``: the step itself (watch, close, place and launch; cancel);
- ``attempts``: a stored job to an executor's AttemptSpec, the executors by kind;
- ``placement_inputs``: what placement decides from, loaded once per step;
- ``observing``: the spot availability a step records;
- ``measurements``: what each attempt measured, stored, and its calibration record;
- ``step_failures``: a job whose step raises, failed after a few in a row;
- ``stop_retry``: an attempt whose stop failed, retried with back-off.
"""
