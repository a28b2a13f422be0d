//! The statistics the paper reports: TrueSkill ratings from pairwise preferences (Herbrich,
//! Minka & Graepel 2006, two players, draws allowed, the usual defaults μ = 25, σ = 25/3,
//! β = σ/2, τ = σ/100, draw probability 0.10; the update is the skillratings crate's), the
//! Kruskal–Wallis H test with its χ² p-value (statrs' distribution), and network density.

use serde::{Deserialize, Serialize};

/// A TrueSkill rating.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    /// Mean skill.
    pub mu: f64,
    /// Uncertainty.
    pub sigma: f64,
}

impl Default for Rating {
    fn default() -> Self {
        Self {
            mu: MU,
            sigma: MU / 3.0,
        }
    }
}

const MU: f64 = 25.0;

/// The outcome of one comparison, for the first player.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The first won.
    Win,
    /// The second won.
    Loss,
    /// Neither.
    Draw,
}

/// Updates two ratings after one comparison: skillratings' two-player TrueSkill, whose
/// defaults are the ones above (β = 25/6, τ = 25/300, draw probability 0.10).
pub fn rate_1vs1(a: Rating, b: Rating, outcome: Outcome) -> (Rating, Rating) {
    use skillratings::Outcomes;
    use skillratings::trueskill::{TrueSkillConfig, TrueSkillRating, trueskill};
    let theirs = |r: Rating| TrueSkillRating {
        rating: r.mu,
        uncertainty: r.sigma,
    };
    let ours = |r: TrueSkillRating| Rating {
        mu: r.rating,
        sigma: r.uncertainty,
    };
    let outcome = match outcome {
        Outcome::Win => Outcomes::WIN,
        Outcome::Loss => Outcomes::LOSS,
        Outcome::Draw => Outcomes::DRAW,
    };
    let (a, b) = trueskill(&theirs(a), &theirs(b), &outcome, &TrueSkillConfig::new());
    (ours(a), ours(b))
}

/// Ratings of `n` players after comparisons `(i, j, outcome for i)`, taken in order.
pub fn ratings(n: usize, games: &[(usize, usize, Outcome)]) -> Vec<Rating> {
    let mut r = vec![Rating::default(); n];
    for &(i, j, o) in games {
        let (a, b) = rate_1vs1(r[i], r[j], o);
        r[i] = a;
        r[j] = b;
    }
    r
}

/// The Kruskal–Wallis test over groups of observations: H (corrected for ties), the degrees
/// of freedom and the p-value from χ².
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KruskalWallis {
    /// The statistic.
    pub h: f64,
    /// Groups − 1.
    pub df: usize,
    /// P(χ²(df) ≥ H).
    pub p: f64,
}

/// Kruskal–Wallis over `groups` (each at least one observation).
pub fn kruskal_wallis(groups: &[Vec<f64>]) -> Option<KruskalWallis> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    if groups.len() < 2 {
        return None;
    }
    let mut all: Vec<(f64, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, v)| v.iter().map(move |x| (*x, g)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len() as f64;
    let mut rank_sum = vec![0.0; groups.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for item in &all[i..=j] {
            rank_sum[item.1] += rank;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let mut h = 12.0 / (n * (n + 1.0))
        * groups
            .iter()
            .zip(&rank_sum)
            .map(|(g, r)| r * r / g.len() as f64)
            .sum::<f64>()
        - 3.0 * (n + 1.0);
    let correction = 1.0 - ties / (n * n * n - n);
    if correction > 0.0 {
        h /= correction;
    }
    let df = groups.len() - 1;
    Some(KruskalWallis {
        h,
        df,
        p: chi2_survival(h, df as f64),
    })
}

/// P(χ²(k) ≥ x), from statrs' χ² distribution (1 for x ≤ 0 or k not above 0).
pub fn chi2_survival(x: f64, k: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    if x <= 0.0 {
        return 1.0;
    }
    ChiSquared::new(k).map_or(1.0, |d| d.sf(x))
}

/// Network density as the paper defines it: η = 2|E| / (|V|(|V| − 1)) for an undirected graph
/// of `n` vertices with `edges` edges.
pub fn density(n: usize, edges: usize) -> f64 {
    if n < 2 {
        0.0
    } else {
        2.0 * edges as f64 / (n as f64 * (n as f64 - 1.0))
    }
}

/// The median of some counts (the mean of the middle two for an even number).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// A median count beside a range it is measured against (`lo`–`hi`): "within …", or how far
/// below or above it lies (counts: whole, or a half with an even number of towns).
pub fn beside(median: f64, lo: f64, hi: f64) -> String {
    let one = lo == hi;
    if median < lo {
        let side = if one { "below it" } else { "below its lowest" };
        format!("{} {side} ({})", count(lo - median), count(lo))
    } else if median > hi {
        let side = if one { "above it" } else { "above its highest" };
        format!("{} {side} ({})", count(median - hi), count(hi))
    } else if one {
        format!("equal to it ({})", count(lo))
    } else {
        format!("within it ({}–{})", count(lo), count(hi))
    }
}

/// A count in words: whole without decimals, else with one (a median of two).
pub fn count(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A figure in words: a whole number without decimals, a share under 1 with three, else one.
pub fn figure(x: f64) -> String {
    if (x - x.round()).abs() >= 1e-9 && x.abs() < 1.0 {
        format!("{x:.3}")
    } else {
        count(x)
    }
}

/// `min / median / max` of some figures (whole numbers without decimals).
pub fn min_median_max(v: &[f64]) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{} / {} / {}", figure(min), figure(median(v)), figure(max))
}

/// `k of n` as a percentage.
pub fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        "–".into()
    } else {
        format!("{:.0} %", k as f64 * 100.0 / n as f64)
    }
}

/// Mean ± standard deviation of shares, as percentages.
pub fn mean_sd(v: &[f64]) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
    } else {
        0.0
    };
    format!("{:.0} % ± {:.0} %", m * 100.0, sd * 100.0)
}

/// Seconds as `1h02m`, `3m05s` or `12s`.
pub fn clock_words(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_median_is_said_against_its_range() {
        assert_eq!(beside(3.0, 4.0, 12.0), "1 below its lowest (4)");
        assert_eq!(beside(12.0, 4.0, 12.0), "within it (4–12)");
        assert_eq!(beside(14.5, 12.0, 17.0), "within it (12–17)");
        assert_eq!(beside(18.5, 12.0, 17.0), "1.5 above its highest (17)");
        assert_eq!(beside(0.5, 5.0, 5.0), "4.5 below it (5)");
        assert_eq!(beside(5.0, 5.0, 5.0), "equal to it (5)");
        assert_eq!(beside(13.0, 12.0, 12.0), "1 above it (12)");
        assert_eq!(beside(4.5, 5.0, 5.0), "0.5 below it (5)");
        assert_eq!(beside(3.5, 4.0, 12.0), "0.5 below its lowest (4)");
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn one_win_from_the_defaults_gives_the_published_values() {
        // The reference implementation: rate_1vs1(Rating(), Rating()) →
        // (29.396, 7.171), (20.604, 7.171); a draw → (25.000, 6.458) each.
        let (w, l) = rate_1vs1(Rating::default(), Rating::default(), Outcome::Win);
        assert!(
            close(w.mu, 29.396, 2e-3) && close(w.sigma, 7.171, 2e-3),
            "{w:?}"
        );
        assert!(
            close(l.mu, 20.604, 2e-3) && close(l.sigma, 7.171, 2e-3),
            "{l:?}"
        );
        let (a, b) = rate_1vs1(Rating::default(), Rating::default(), Outcome::Draw);
        assert!(
            close(a.mu, 25.0, 1e-9) && close(a.sigma, 6.458, 2e-3),
            "{a:?}"
        );
        assert_eq!(a, b);
        let (l2, w2) = rate_1vs1(Rating::default(), Rating::default(), Outcome::Loss);
        assert_eq!((l2, w2), (l, w));
    }

    #[test]
    fn the_player_who_always_wins_rates_highest() {
        let mut games = Vec::new();
        for _ in 0..20 {
            games.push((0, 1, Outcome::Win));
            games.push((1, 2, Outcome::Win));
            games.push((0, 2, Outcome::Win));
        }
        let r = ratings(3, &games);
        assert!(r[0].mu > r[1].mu && r[1].mu > r[2].mu, "{r:?}");
        assert!(r.iter().all(|x| x.sigma < 25.0 / 3.0));
    }

    #[test]
    fn kruskal_wallis_matches_a_hand_computed_example() {
        // Ranks of 1..6: group A {1,2,3} → 6, group B {4,5,6} → 15; N = 6.
        // H = 12/(6·7)·(36/3 + 225/3) − 3·7 = (2/7)·87 − 21 = 3.857142…; df 1.
        let kw = kruskal_wallis(&[vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]).unwrap();
        assert!(close(kw.h, 27.0 / 7.0, 1e-9), "{kw:?}");
        assert_eq!(kw.df, 1);
        // P(χ²(1) ≥ 3.857) = 0.04953.
        assert!(close(kw.p, 0.04953, 1e-4), "{kw:?}");
        // Ties: {1,1} and {2,2}: ranks 1.5,1.5 | 3.5,3.5; H = 12/20·(9/2+49/2) − 15 = 2.4;
        // correction 1 − (6+6)/(64−4) = 0.8 → 3.0.
        let kw = kruskal_wallis(&[vec![1.0, 1.0], vec![2.0, 2.0]]).unwrap();
        assert!(close(kw.h, 3.0, 1e-9), "{kw:?}");
    }

    #[test]
    fn chi_square_tail_is_right() {
        assert!(close(chi2_survival(3.841_458_8, 1.0), 0.05, 1e-6));
        assert!(close(chi2_survival(9.487_729, 4.0), 0.05, 1e-6));
        assert!(close(chi2_survival(150.29, 4.0), 0.0, 1e-20));
        assert!(close(chi2_survival(2.0, 2.0), (-1.0f64).exp(), 1e-9));
    }

    #[test]
    fn density_is_the_papers() {
        assert_eq!(density(25, 50), 2.0 * 50.0 / 600.0);
        assert_eq!(density(1, 0), 0.0);
        assert_eq!(density(3, 3), 1.0);
    }
    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn min_median_max_writes_whole_numbers_bare_and_shares_with_three_decimals() {
        assert_eq!(min_median_max(&[]), "–");
        assert_eq!(min_median_max(&[5.0, 2.0, 9.0]), "2 / 5 / 9");
        assert_eq!(min_median_max(&[0.25, 0.5]), "0.250 / 0.375 / 0.500");
        assert_eq!(min_median_max(&[2.0, 3.0]), "2 / 2.5 / 3");
    }
}
