//! MPI's Cartesian topology arithmetic, as an MPI library computes it: MPI_Dims_create's
//! balanced grid, a rank's coordinates and back (MPI_Cart_coords, MPI_Cart_rank) and
//! MPI_Cart_shift's neighbour. Shared by the static interpreter (src/predict) and trace
//! scaling (src/scale).

/// MPI_Dims_create: a balanced grid, dimensions in non-increasing order, given ones kept.
pub fn dims_create(nnodes: i64, given: &[i64], ndims: usize) -> Option<Vec<i64>> {
    let mut dims: Vec<i64> = (0..ndims).map(|k| given.get(k).copied().unwrap_or(0)).collect();
    let fixed: i64 = dims.iter().filter(|d| **d > 0).product();
    if fixed == 0 || nnodes % fixed != 0 {
        return None;
    }
    let free: Vec<usize> = (0..ndims).filter(|k| dims[*k] <= 0).collect();
    let mut rest = nnodes / fixed;
    if free.is_empty() {
        return (rest == 1).then_some(dims);
    }
    // Prime factors, largest first, each given to the currently smallest free dimension.
    let mut factors = Vec::new();
    let mut p = 2;
    while p * p <= rest {
        while rest % p == 0 {
            factors.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    let mut f: Vec<i64> = vec![1; free.len()];
    for x in factors {
        let k = (0..f.len()).min_by_key(|k| f[*k]).unwrap_or(0);
        f[k] *= x;
    }
    f.sort_unstable_by(|a, b| b.cmp(a));
    for (k, d) in free.iter().zip(f) {
        dims[*k] = d;
    }
    Some(dims)
}

/// The rank `by` steps along `dim` from `rank` in a Cartesian grid (wrapping where the
/// dimension is periodic); None outside an open edge (MPI_PROC_NULL).
pub fn cart_neighbour(rank: i64, dims: &[i64], periods: &[bool], dim: usize, by: i64) -> Option<i64> {
    let mut c = cart_coords(rank, dims);
    let n = dims[dim];
    let x = c[dim] + by;
    if (0..n).contains(&x) {
        c[dim] = x;
    } else if periods.get(dim).copied().unwrap_or(false) {
        c[dim] = x.rem_euclid(n);
    } else {
        return None;
    }
    Some(cart_rank(&c, dims))
}

/// Row-major coordinates of a rank (MPI's order: the last dimension varies fastest).
pub fn cart_coords(rank: i64, dims: &[i64]) -> Vec<i64> {
    let mut c = vec![0; dims.len()];
    let mut r = rank;
    for k in (0..dims.len()).rev() {
        let n = dims[k].max(1);
        c[k] = r % n;
        r /= n;
    }
    c
}

/// The rank at `coords`: the inverse of [`cart_coords`].
pub fn cart_rank(coords: &[i64], dims: &[i64]) -> i64 {
    coords.iter().zip(dims).fold(0, |acc, (c, n)| acc * n + c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_like_mpi() {
        assert_eq!(dims_create(12, &[0, 0], 2), Some(vec![4, 3]));
        assert_eq!(dims_create(16, &[0, 0], 2), Some(vec![4, 4]));
        assert_eq!(dims_create(8, &[0, 0, 0], 3), Some(vec![2, 2, 2]));
        assert_eq!(dims_create(6, &[0, 3], 2), Some(vec![2, 3]));
        assert_eq!(dims_create(7, &[0, 3], 2), None);
        assert_eq!(dims_create(1, &[0, 0], 2), Some(vec![1, 1]));
    }

    #[test]
    fn coords_round_trip() {
        let dims = [3, 4];
        for r in 0..12 {
            assert_eq!(cart_rank(&cart_coords(r, &dims), &dims), r);
        }
        assert_eq!(cart_coords(5, &dims), vec![1, 1]);
    }
}
