"""Checks: parsed evidence in, findings out.  Each check exists once and serves dump, scan and Spark alike."""
