"""What the user wants run: the job spec, the workload model, checkpoints and executors."""
