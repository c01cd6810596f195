"""Evaluation flows that compare the evidence protocol with other ways of reading documents."""
