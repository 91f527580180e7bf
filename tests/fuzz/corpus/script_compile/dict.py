def h(d: Dict[str, int], t: Tuple[int, float]) -> Optional[float]:
    if "a" in d:
        return float(d["a"]) * t[1]
    return None
