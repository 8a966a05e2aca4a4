"""Beside the pipeline: the reference server and calibration, the noise floor, and the generators of the
demo's model and dataset (which the stages call). May import any stage.
"""
