"""Quality control: attention checks and crowd quality (paper 3.4, 3.5, G.1-G.3).

injection: attention checks put into HITs as they are built; disguise: what makes a check look like a real unit;
grading: a submission's checks graded; policy: approve, reject, bonus, pause, block; selectors: which labels count;
qualification: the comprehension test; dashboard: per-annotator quality numbers for managers.
"""
