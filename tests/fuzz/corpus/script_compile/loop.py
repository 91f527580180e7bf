def g(x: Tensor, n: int) -> List[Tensor]:
    out: List[Tensor] = []
    for i in range(n):
        if i % 2 == 0:
            out.append(x * i)
        else:
            out.append(torch.relu(x))
    return out
