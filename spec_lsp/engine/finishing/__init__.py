"""What is shown of a generation: post-processing (postprocess.py: single or multi-line, suffix
overlap, indentation, stop rules), the first answer cut early (first_answer.py), and the
confidence gate (confidence.py) that decides whether it is shown at all."""
