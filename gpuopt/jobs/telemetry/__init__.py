"""GPU telemetry of each attempt: nvidia-smi sampled beside the job (sampler.py, shipped
to the node by script.py), folded into a bounded summary (parse.py) that the control
side reads back (summary.py)."""
