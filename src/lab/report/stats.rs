//! The statistics the paper reports: TrueSkill ratings from pairwise preferences (Herbrich,
//! Minka & Graepel 2006, two players, draws allowed, the usual defaults μ = 25, σ = 25/3,
//! β = σ/2, τ = σ/100, draw probability 0.10), the Kruskal–Wallis H test with its χ² p-value,
//! and network density.

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
const BETA: f64 = MU / 6.0;
const TAU: f64 = MU / 300.0;
const DRAW_PROBABILITY: f64 = 0.10;

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

fn pdf(x: f64) -> f64 {
    (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The complementary error function (Numerical Recipes' `erfcc`, |error| < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

fn cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The inverse of the standard normal CDF (by bisection: exact enough, used once).
fn ppf(p: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0, 10.0);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if cdf(mid) < p { lo = mid } else { hi = mid }
    }
    (lo + hi) / 2.0
}

/// Updates two ratings after one comparison.
pub fn rate_1vs1(a: Rating, b: Rating, outcome: Outcome) -> (Rating, Rating) {
    let (w, l, draw) = match outcome {
        Outcome::Win => (a, b, false),
        Outcome::Loss => (b, a, false),
        Outcome::Draw => (a, b, true),
    };
    let (sw2, sl2) = (w.sigma.powi(2) + TAU * TAU, l.sigma.powi(2) + TAU * TAU);
    let c2 = 2.0 * BETA * BETA + sw2 + sl2;
    let c = c2.sqrt();
    let eps = ppf((DRAW_PROBABILITY + 1.0) / 2.0) * std::f64::consts::SQRT_2 * BETA / c;
    let t = (w.mu - l.mu) / c;
    let (v, wv) = if draw {
        let denom = cdf(eps - t) - cdf(-eps - t);
        let v = (pdf(-eps - t) - pdf(eps - t)) / denom;
        let wv = v * v + ((eps - t) * pdf(eps - t) + (eps + t) * pdf(eps + t)) / denom;
        (v, wv)
    } else {
        let denom = cdf(t - eps);
        let v = pdf(t - eps) / denom;
        (v, v * (v + t - eps))
    };
    let nw = Rating {
        mu: w.mu + sw2 / c * v,
        sigma: (sw2 * (1.0 - sw2 / c2 * wv)).sqrt(),
    };
    let nl = Rating {
        mu: l.mu - sl2 / c * v,
        sigma: (sl2 * (1.0 - sl2 / c2 * wv)).sqrt(),
    };
    match outcome {
        Outcome::Loss => (nl, nw),
        _ => (nw, nl),
    }
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

/// P(χ²(k) ≥ x): the regularised upper incomplete gamma Q(k/2, x/2).
pub fn chi2_survival(x: f64, k: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    gamma_q(k / 2.0, x / 2.0)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos (g = 7, n = 9).
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

fn gamma_q(a: f64, x: f64) -> f64 {
    if x < a + 1.0 {
        // Series for P, then Q = 1 − P.
        let (mut sum, mut del, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..500 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-14 {
                break;
            }
        }
        1.0 - sum * (-x + a * x.ln() - ln_gamma(a)).exp()
    } else {
        // Continued fraction (Lentz).
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..500 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-14 {
                break;
            }
        }
        (-x + a * x.ln() - ln_gamma(a)).exp() * h
    }
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
