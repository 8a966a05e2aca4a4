"""Commands beside the pipeline: the reference server (``refserver``), calibration, the noise floor (which runs
the pipeline again and again). May import any stage; no stage imports them.
"""
