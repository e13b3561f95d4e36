"""EXP2, LOG2 and SIN for renderers without them (in progress)."""
from tg.uop import PatternMatcher
pm_transcendental = PatternMatcher([])
