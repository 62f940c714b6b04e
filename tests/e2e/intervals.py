"""Critical sections as (start, end) intervals, as the end-to-end tests of lock shapes check them."""


def most_at_once(intervals):
    """The most intervals open at one moment (one ending as another starts do not overlap)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def overlaps(a, b):
    return a[0] < b[1] and b[0] < a[1]
