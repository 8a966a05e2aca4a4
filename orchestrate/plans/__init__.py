"""Every kind of run as a step plan (``base.StepPlan``), which the run loop runs without asking which kind it is."""
