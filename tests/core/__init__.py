"""Tests of the SDK-free core (model, lifecycle, codecs) and the task engine; they run on every SDK."""
